"""The supported API: every name in `mcp_apps_host.__all__` is there, and every error shares one root."""

from __future__ import annotations

import inspect
import subprocess
import sys

import mcp_apps_host
from mcp_apps_host import errors


def test_every_listed_name_resolves():
    for name in mcp_apps_host.__all__:
        assert getattr(mcp_apps_host, name) is not None, name
    assert sorted(dir(mcp_apps_host)) == sorted(mcp_apps_host.__all__)


def test_the_api_covers_the_view_protocol_settings_config_and_errors():
    for name in ("ViewSession", "ViewSpec", "HostEnvironment", "Effect", "PostToView", "Limits", "HostConfig",
                 "HostError", "__version__"):
        assert name in mcp_apps_host.__all__


def test_every_error_the_host_raises_on_purpose_has_one_root():
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if c.__module__ == errors.__name__]
    assert len(classes) > 5
    assert all(issubclass(c, errors.HostError) for c in classes)
    assert {c.__name__ for c in classes} <= set(mcp_apps_host.__all__)


def test_importing_the_package_loads_nothing_heavy():
    # A demo server imports `mcp_apps_host.version`: that must not pull in the web app or the database.
    code = ("import sys, mcp_apps_host.version; "
            "print(sorted(m for m in ('starlette', 'sqlalchemy', 'openai', 'mcp_apps_host.web') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
