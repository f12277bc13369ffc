"""`import poolc` changes nothing in the host process (#43): the Ctrl-C hooks belong to the
command's entry point (poolc.console), so a program that uses the library and is
interrupted keeps its own excepthook, unraisablehook and atexit handlers."""

import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# The host program: its own hooks and atexit handler first, then the library and a real call
# into it, then a real SIGINT the process sends itself at a line it reaches (no timing).
HOST = """
import atexit, signal, sys

def my_hook(kind, value, tb):
    sys.stderr.write(f"my hook: {kind.__name__}\\n")

def my_unraisable(args):
    sys.stderr.write("my unraisable hook\\n")

sys.excepthook, sys.unraisablehook = my_hook, my_unraisable
atexit.register(lambda: sys.stdout.write("my atexit handler ran\\n"))

import poolc
from poolc.commands.validate import validate_paths

result = validate_paths([sys.argv[1]])
print(f"validated: {len(result.config.pools)} pools, ok={result.ok}")
print(f"hooks kept: {sys.excepthook is my_hook and sys.unraisablehook is my_unraisable}")
sys.stdout.flush()
signal.raise_signal(signal.SIGINT)
print("not reached")
"""


def test_a_program_importing_poolc_keeps_its_hooks_and_atexit_handlers():
    ran = subprocess.run([sys.executable, "-c", HOST, str(REPO / "examples" / "pools")], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    lines = ran.stdout.splitlines()
    assert lines[0].startswith("validated: ") and not lines[0].startswith("validated: 0 "), ran.stdout
    assert lines[1:] == ["hooks kept: True", "my atexit handler ran"], (ran.stdout, ran.stderr)
    # Python's own end of an uncaught KeyboardInterrupt, through the program's hook (killed by
    # SIGINT, as a shell expects): not poolc's one line and exit 130
    assert ran.stderr == "my hook: KeyboardInterrupt\n", ran.stderr
    assert ran.returncode == -signal.SIGINT, ran.returncode


def test_the_console_entry_point_installs_the_ctrl_c_hooks():
    code = ("import sys\nbefore = sys.excepthook, sys.unraisablehook\nimport poolc, poolc.commands.validate\n"
            "assert (sys.excepthook, sys.unraisablehook) == before\nimport poolc.console\n"
            "assert sys.excepthook is not before[0] and sys.unraisablehook is not before[1]\n"
            "import signal\nsignal.raise_signal(signal.SIGINT)\n")
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert (ran.returncode, ran.stderr) == (130, "poolc: interrupted\n")


def test_the_installed_command_is_the_console_entry_point():
    """pyproject's [project.scripts] and `python -m poolc` both go through poolc.console."""
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"poolc": "poolc.console:run"}
    assert "from poolc.console import run" in (REPO / "poolc" / "__main__.py").read_text()
    ran = subprocess.run([sys.executable, "-m", "poolc", "--version"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert ran.returncode == 0 and ran.stdout.startswith("poolc, version "), ran
