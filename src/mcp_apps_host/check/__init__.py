"""`mcp-apps-host check`: render every view of the given servers in headless Chromium and report on each.

It runs a real host in-process and drives its console page with Playwright, so a view is
checked on exactly the path a person's view takes. What it concludes comes from the audit
trail of that host (every message both ways, every decision) plus what the browser saw.
"""
