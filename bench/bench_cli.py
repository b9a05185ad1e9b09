"""Command-line conventions shared by the bench scripts that prepare here and run on the GPU
machine (ddp_side_by_side.py, lm_side_by_side.py): bad input is one line on stderr,
`<script>: error: ...`, and exit status 2, never a traceback."""
import argparse
import os
import subprocess
import sys


def fail(message):
    """Bad input: one line on stderr, exit status 2."""
    print(f"{os.path.basename(sys.argv[0])}: error: {message}", file=sys.stderr)
    sys.exit(2)


class Parser(argparse.ArgumentParser):
    """argparse's usage errors as one line too."""

    def error(self, message):
        fail(message)


def run_mode(handlers, args):
    """Runs handlers[args.mode](args). What the inputs or the machine lack (torch on the
    compiler machine, a tool that failed, a folder that is a file, unreadable JSON, a field of
    the wrong type) ends as fail()'s one line."""
    try:
        return handlers[args.mode](args)
    except ModuleNotFoundError as e:
        fail(f"{args.mode} needs the Python module '{e.name}' (the GPU machine's "
             "/opt/torch/.venv/bin/python3 has torch)")
    except subprocess.CalledProcessError as e:
        fail(f"{e.cmd[0]} exited {e.returncode} (its message is above)")
    except (OSError, ValueError) as e:
        fail(f"{args.mode}: {e}")
