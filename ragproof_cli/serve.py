"""`ragproof serve` and `ragproof label`: the results browser on 127.0.0.1 (CONTRACT section 22)."""

from __future__ import annotations

import argparse
import getpass

from ragproof_cli.common import EXIT_OK, UsageError, open_store
from ragproof_core.calibration import DEFAULT_PER_METRIC
from ragproof_core.present import LabelSession
from ragproof_core.store import LabelError, check_annotator
from ragproof_serve import Browser, PortInUse, serve


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {port}")
    return port


def _default_annotator() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name in the environment or the password file
        return "annotator"


def _serve(browser: Browser, port: int) -> int:
    try:
        serve(browser, port)
    except PortInUse as exc:
        raise UsageError(str(exc)) from None
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    return _serve(Browser(open_store()), args.port)


def cmd_label(args: argparse.Namespace) -> int:
    store = open_store()
    try:
        session = LabelSession(
            args.run_id,
            args.metric,
            args.sample,
            args.seed,
            check_annotator(args.annotator or _default_annotator()),
        )
        browser = Browser(store, label=session)
        # The sample is drawn before the server starts: a bad run or metric is one line, exit 1.
        if not browser.queue(session).items:
            raise LabelError(f"run {args.run_id} has no judge-scored case to label")
    except LabelError as exc:
        raise UsageError(f"label: {exc}") from None
    return _serve(browser, args.port)


def register(sub: argparse._SubParsersAction) -> None:
    serve_parser = sub.add_parser(
        "serve", help="browse runs, trends, reports and comparisons on 127.0.0.1"
    )
    serve_parser.add_argument(
        "--port", type=_port, default=0, help="port on 127.0.0.1 (default: a free one, printed)"
    )
    serve_parser.set_defaults(func=cmd_serve)

    label = sub.add_parser(
        "label", help="label a run's judge-scored cases in the browser, one at a time"
    )
    label.add_argument("run_id", metavar="RUN_ID", help="the run to label (see ragproof runs)")
    label.add_argument("--metric", metavar="M", help="label this judge metric only")
    label.add_argument(
        "--sample",
        metavar="N",
        type=int,
        default=DEFAULT_PER_METRIC,
        help=f"cases per metric, stratified by the judge's band (default {DEFAULT_PER_METRIC})",
    )
    label.add_argument("--seed", metavar="S", type=int, default=0, help="the sample's seed")
    label.add_argument(
        "--annotator", metavar="NAME", help="who is labelling (default: your user name)"
    )
    label.add_argument(
        "--port", type=_port, default=0, help="port on 127.0.0.1 (default: a free one, printed)"
    )
    label.set_defaults(func=cmd_label)
