"""Run the console under yappi with its CPU clock and write where its time went when it stops.

CPU time, not wall time: a thread waiting (for the database, for the MCP server, for a core
the machine's other work holds) costs nothing here, so the figures hold on a busy machine.
Every thread is profiled: the event loop, the audit writer, the threads conversation items
are written from. One worker only (``--workers 1``). yappi is not a dependency of the
project: ``pip install --target /some/dir yappi`` and put that directory in PYTHONPATH.

    python bench/profile_host.py OUT.txt serve --no-open --port 8765 ...   # the `mcp_apps_host` arguments

`bench/load.py --profile OUT.txt` starts its console this way and sends it SIGUSR2 once the load
is over, which writes OUT.txt: functions by CPU time, inclusive and own, with their number of calls.
"""

from __future__ import annotations

import os
import signal
import sys


def write(out: str) -> None:
    import yappi

    yappi.stop()
    stats = yappi.get_func_stats()
    with open(out + ".part", "w") as f:
        f.write("ttot_s\ttsub_s\tcalls\tfunction\n")
        for s in sorted(stats, key=lambda s: -s.ttot):
            f.write(f"{s.ttot:.4f}\t{s.tsub:.4f}\t{s.ncall}\t{s.name} ({s.module}:{s.lineno})\n")
        f.write("\n# threads: name, CPU seconds\n")
        for t in yappi.get_thread_stats():
            f.write(f"# {t.name}\t{t.ttot:.3f}\n")
    os.replace(out + ".part", out)


def main() -> None:
    import yappi

    out, argv = sys.argv[1], sys.argv[2:]
    # SIGUSR2 (which the server leaves alone) writes the profile: the load is over, the console still up.
    signal.signal(signal.SIGUSR2, lambda *_: write(out))
    yappi.set_clock_type("cpu")
    yappi.start(builtins=False, profile_threads=True)
    from mcp_apps_host.cli import main as host_main

    host_main(argv)


if __name__ == "__main__":
    main()
