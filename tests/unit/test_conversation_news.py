"""News of a conversation reaches the tabs showing it, and only them."""

from __future__ import annotations

from typing import Any

from mcp_apps_host.host.process.news import ConversationNews


def test_news_goes_to_the_tabs_showing_its_conversation_only_until_they_stop_watching() -> None:
    news = ConversationNews()
    heard: list[tuple[str, Any]] = []

    def failing(message: dict[str, Any]) -> None:
        raise RuntimeError("this tab broke")

    stop_a = news.watch("c1", lambda m: heard.append(("a", m["item"])))
    news.watch("c1", failing)  # a broken tab does not keep the news from the others
    news.watch("c2", lambda m: heard.append(("b", m["item"])))
    news.heard({"conversation": "c1", "item": 1})
    news.heard({"conversation": "c2", "item": 2})
    news.heard({"conversation": "c3", "item": 3})
    news.heard({"item": 4})  # not about a conversation: nobody hears it
    assert heard == [("a", 1), ("b", 2)]
    stop_a()
    stop_a()  # twice is harmless
    news.heard({"conversation": "c1", "item": 5})
    assert heard == [("a", 1), ("b", 2)]
