"""The test suite's local judge server, run as its own process, with a request counter.

``python -m benchmarks._judge_process --latency 1.0`` prints the server's base
URL, then answers each line read on stdin: ``count`` prints how many requests
the server has received so far. End of input stops it. Running the server in
a separate process keeps its event loop and CPU apart from the client being
measured, as a real judge would be.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks._ragas import ragas_content
from tests.support.judge_server import JudgeServer, ReceivedRequest, default_content


def reply(request: ReceivedRequest) -> str:
    """ragproof's prompts get the test server's default replies; RAGAS's its own format."""
    content = ragas_content(request)
    return default_content(request) if content is None else content


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, required=True, help="seconds per reply")
    args = parser.parse_args(argv)
    server = JudgeServer(latency_s=args.latency, responder=reply)
    server.start()
    try:
        print(server.url, flush=True)
        for line in sys.stdin:
            if line.strip() == "count":
                print(server.request_count, flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
