"""The services of one tab, built together and handed to the parts that need several of them."""

from __future__ import annotations

from dataclasses import dataclass

from ..process.core import Host
from .asking import TabAsks
from .audit import Auditor
from .calls import Calls
from .consents import Consents
from .journal import ConversationLog
from .later import LaterResults
from .liveviews import LiveViews
from .mounting import Mounting
from .page import Page
from .runner import CallRunner


@dataclass(frozen=True)
class TabServices:
    host: Host
    page: Page
    log: ConversationLog  # the conversation shown and what is kept of it
    audit: Auditor
    consents: Consents
    views: LiveViews
    mounting: Mounting
    runner: CallRunner  # every call's card, record and audit trail
    calls: Calls  # the person's calls
    asks: TabAsks  # what servers ask the person in this tab
    later: LaterResults  # later calls of a tool, to its view already open
