"""What a host is started with: servers, policies, limits, checked into plain values."""
