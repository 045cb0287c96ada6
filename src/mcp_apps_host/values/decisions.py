"""The words the audit trail and the consent dialogs are written in: each a closed set, typed."""

from __future__ import annotations

from typing import Literal

# Who sent a recorded message to whom.
# (`admin->host`: an admin changed what the host runs, e.g. the server registry.)
Direction = Literal["view->host", "host->view", "host->server", "server->host", "model->host", "admin->host"]
# What the host decided about it: by policy (allowed, refused), or by the person (asked, then consented or declined).
Decision = Literal["allowed", "refused", "asked", "consented", "declined"]
# What a consent dialog asks about.
ConsentKind = Literal["tool-call", "app-tool-call", "message", "open-link", "download", "sampling", "open-view"]
