#!/usr/bin/env bash
# The wheels the lent GPU machine lacks (its image has torch, numpy, pandas, scipy; not pydantic),
# for CPython 3.12 on x86-64, into .whl/ (ignored by git; scripts/gpu_session.sh installs them).
set -eu
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
  pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 typing_extensions==4.16.0
ls .whl
