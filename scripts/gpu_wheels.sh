#!/usr/bin/env bash
# The wheels the lent GPU machine lacks (its image has torch, numpy, pandas, scipy, triton; not
# pydantic), for CPython 3.12 on x86-64, into .whl/ (ignored by git; scripts/gpu_session.sh
# installs them).
#
#   bash scripts/gpu_wheels.sh                  # pydantic and its needs, into .whl/
#   bash scripts/gpu_wheels.sh titan CHECKOUT   # also torchtitan 0.3.0 and the needs the image lacks,
#                                               # into .tt/wheels/, and CHECKOUT's test tokenizer into .tt/
set -eu
get() { python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$@"; }
get .whl pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 typing_extensions==4.16.0
ls .whl
if [ "${1:-}" = titan ]; then
  get .tt/wheels torchtitan==0.3.0 torchdata==0.11.0 torch_checkpointing==0.1.1 datasets==4.7.0 dill==0.4.0 \
    multiprocess==0.70.18 tyro==1.0.17 docstring-parser==0.18.0 typeguard==4.6.1 shtab==1.13.0 spmd_types==0.2.3
  mkdir -p .tt/tokenizer && cp "$2"/tests/assets/tokenizer/tokenizer.json "$2"/tests/assets/tokenizer/tokenizer_config.json .tt/tokenizer/
  ls .tt/wheels .tt/tokenizer
fi
