"""`python -m lab <command>`: the lab's command line. Errors are one line, never a traceback."""

import argparse
import sys

from lab import LabError


def _docker(args):
    from lab import engine  # noqa: PLC0415

    engine.ensure()


def _images(args):
    from lab import engine, images  # noqa: PLC0415

    images.resolve(args.names)  # unknown names fail before docker is touched
    images.build(engine.client(), args.names, force=args.force)


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m lab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("docker", help="make the docker engine answer (installs/starts it when root)").set_defaults(
        func=_docker
    )
    p = sub.add_parser("images", help="build the Debian base images (only missing or changed ones)")
    p.add_argument("names", nargs="*", metavar="NAME", help="debian12, debian12-systemd, debian13, debian13-systemd")
    p.add_argument("--force", action="store_true", help="rebuild even when up to date")
    p.set_defaults(func=_images)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except LabError as exc:
        print(f"lab: error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("lab: interrupted", file=sys.stderr)
        return 130
    return 0
