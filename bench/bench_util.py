"""Helpers the Python benches share: a timestamped log line and a bounded wait."""
import datetime
import sys
import time


def log(msg):
    print(f"[{datetime.datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def wait_until(pred, timeout, interval=0.1, what="condition"):
    """pred()'s first truthy value; TimeoutError naming `what` after `timeout` seconds."""
    deadline = time.time() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.time() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
