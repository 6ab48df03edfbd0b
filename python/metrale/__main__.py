"""python -m metrale: `quantize IN OUT [--force] [--device cuda]` (convert.py) and `info`."""

import argparse
import sys

import metrale

from . import convert


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m metrale", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    q = commands.add_parser(
        "quantize", help="a bf16 safetensors model -> a ModelOpt NVFP4 checkpoint"
    )
    q.add_argument("input", help="a .safetensors file or a model directory (sharded or not)")
    q.add_argument("output", help="the directory to write the checkpoint into")
    q.add_argument("--force", action="store_true", help="overwrite a non-empty output directory")
    q.add_argument(
        "--device", default=None, help="where to quantize: cpu (default) or cuda[:N] (needs torch)"
    )
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    commands.add_parser("info", help="version and backends of this build")
    args = parser.parse_args(argv)
    if args.command == "info":
        print(f"metrale {metrale.__version__}")
        for name, state in metrale.backends().items():
            print(f"  {name}: {state}")
        return 0
    try:
        result = convert.convert(
            args.input, args.output, force=args.force, device=args.device, progress=not args.quiet
        )
    except metrale.Error as e:
        print(f"python -m metrale quantize: {e}", file=sys.stderr)
        return 1
    print(
        f"{args.output}: {len(result['quantized'])} Linear weights in NVFP4, "
        f"{len(result['kept'])} tensors kept as they were"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
