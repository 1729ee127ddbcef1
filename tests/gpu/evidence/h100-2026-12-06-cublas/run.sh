#!/usr/bin/env bash
set -u
mkdir -p . $OUT/c && tar xzf next-src.tar.gz -C . && cd .
mkdir -p .collections/ansible_collections/gpufleet && ln -sfn ../../.. .collections/ansible_collections/gpufleet/nvidia
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $OLDPWD/.whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH LC_ALL=C.UTF-8 ANSIBLE_COLLECTIONS_PATH=./.collections
O=$OUT/c
( dpkg -l | grep -E "libcublas|libcurand|cuda-toolkit|cuda-libraries"; ls /usr/local/cuda-13.0/targets/x86_64-linux/lib/ | grep -E "cublas|curand" ) > $O/host-libs.txt 2>&1
GPUFLEET_EXPECT_GPU=H200 GPUFLEET_EXPECT_CUDNN=9.14.0 python3 -m pytest -p no:cacheprovider -rA --hosts=local:// tests/gpu > $O/gpu-tests.txt 2>&1; echo "rc=$?" >> $O/gpu-tests.txt
cd $OUT && tar czf cublas-h200.tgz c && rm -rf c
