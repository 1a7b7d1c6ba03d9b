"""`ragproof generate`: test cases written by ragproof (injection cases, from the payloads;
attacks planted in a copy of a corpus)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ragproof_cli import generate_nuggets, generate_qa
from ragproof_cli.common import EXIT_OK
from ragproof_core.generate.attacks import generate_command
from ragproof_core.generate.corpus_attacks import (
    DEFAULT_COUNT,
    DEFAULT_K,
    generate_attacks_command,
)


def cmd_generate_injection(args: argparse.Namespace) -> int:
    payloads = [p.strip() for p in args.payloads.split(",")] if args.payloads else None
    print(
        generate_command(
            Path(args.dataset),
            Path(args.out),
            payloads,
            args.count,
            args.seed,
            Path(args.documents_out) if args.documents_out else None,
        )
    )
    return EXIT_OK


def cmd_generate_attacks(args: argparse.Namespace) -> int:
    print(
        generate_attacks_command(
            Path(args.corpus), Path(args.out_corpus), Path(args.out), args.count, args.seed, args.k
        )
    )
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    """Adds `generate` with its generators: `injection` and `attacks` here, `qa` from
    ``generate_qa``, `nuggets` from ``generate_nuggets``."""
    generate = sub.add_parser("generate", help="generate test cases")
    gen_sub = generate.add_subparsers(dest="what", required=True)
    injection = gen_sub.add_parser("injection", help="prompt-injection cases from a dataset")
    injection.add_argument(
        "--dataset", required=True, help="dataset whose answerable questions carry the payloads"
    )
    injection.add_argument(
        "--out", required=True, help="the injection cases file to write (JSON Lines)"
    )
    injection.add_argument("--payloads", help="comma-separated payload ids (default: all)")
    injection.add_argument("--count", type=int, help="number of cases (default: all pairs)")
    injection.add_argument(
        "--seed", type=int, default=0, help="seed of the payload-question pairing (default 0)"
    )
    injection.add_argument(
        "--documents-out", help="also write indirect-injection documents for your index"
    )
    injection.set_defaults(func=cmd_generate_injection)
    attacks = gen_sub.add_parser(
        "attacks", help="a copy of a corpus with planted injection and poisoning chunks"
    )
    attacks.add_argument("--corpus", required=True, help="the corpus to attack (JSON Lines)")
    attacks.add_argument(
        "--out-corpus", required=True, help="the attacked copy of the corpus to write"
    )
    attacks.add_argument("--out", required=True, help="the attack cases file to write")
    attacks.add_argument(
        "--count",
        type=int,
        default=DEFAULT_COUNT,
        help=f"chunks to plant, injection and poisoning alternating (default {DEFAULT_COUNT})",
    )
    attacks.add_argument(
        "--seed", type=int, default=0, help="seed of the targets and payloads (default 0)"
    )
    attacks.add_argument(
        "--k",
        type=int,
        default=DEFAULT_K,
        help=f"each question must retrieve its chunk in the demo BM25's top k (default "
        f"{DEFAULT_K})",
    )
    attacks.set_defaults(func=cmd_generate_attacks)
    generate_qa.register(gen_sub)
    generate_nuggets.register(gen_sub)
