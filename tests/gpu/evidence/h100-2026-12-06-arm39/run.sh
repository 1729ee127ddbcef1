#!/usr/bin/env bash
# on the device: unpack arm39 (issue 39: the loader fallback, host.tegra, machine in the audit), run its GPU tests (cuBLAS/cuRAND program), audit, facts; one tar under $OUT
set -u
mkdir -p /tmp/n $OUT/n && tar xzf arm39-src.tar.gz -C /tmp/n && cp -r .whl /tmp/n/.whl
cd /tmp/n && mkdir -p .collections/ansible_collections/gpufleet && ln -sfn ../../.. .collections/ansible_collections/gpufleet/nvidia
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH LC_ALL=C.UTF-8 ANSIBLE_FORCE_COLOR=0 ANSIBLE_CONFIG=/tmp/n/ansible.cfg ANSIBLE_COLLECTIONS_PATH=/tmp/n/.collections
py=$(command -v python3); X=(-e "ansible_python_interpreter=$py" -e ansible_become=false)
O=$OUT/n
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); case "$gpu" in *H200*) e=H200;; *H100*) e=H100;; *) e="$gpu";; esac
( echo "GPU: $gpu"; dpkg -l | grep -E "cuda-toolkit|cuda-libraries|libcublas|libcurand|libcufft|libcusolver|libcusparse|libnpp|libnvjpeg|cuda-cupti|libnvjitlink|cuda-nvtx" ; apt-mark showhold; ls /usr/local/cuda-13.0/targets/x86_64-linux/lib/ | grep -E "cublas|curand" ) > $O/host-libs.txt 2>&1
GPUFLEET_EXPECT_GPU=$e GPUFLEET_EXPECT_CUDNN=9.14.0 python3 -m pytest -p no:cacheprovider -rA --hosts=local:// tests/gpu > $O/gpu-tests.txt 2>&1; echo "rc=$?" >> $O/gpu-tests.txt
ansible localhost "${X[@]}" -m gpufleet.nvidia.nvidia_facts -a '{"gather_subset":["cuda","sources"]}' > $O/facts-cuda.txt 2>&1; echo "rc=$?" >> $O/facts-cuda.txt
ansible localhost "${X[@]}" -m gpufleet.nvidia.nvidia_facts -a '{"gather_subset":["gpu","driver"]}' > $O/facts-driver.txt 2>&1; echo "rc=$?" >> $O/facts-driver.txt
ansible localhost "${X[@]}" -m gpufleet.nvidia.nvidia_compat -a '{"cuda_version":"13.0","cudnn_version":"9.14.0"}' > $O/compat.txt 2>&1; echo "rc=$?" >> $O/compat.txt
ansible localhost "${X[@]}" -m gpufleet.nvidia.nvidia_compat -a '{"cuda_version":"13.0","machine":"aarch64","fail_on_incompatible":false}' >> $O/compat.txt 2>&1; echo "rc=$?" >> $O/compat.txt
( uname -m; ls /etc/nv_tegra_release 2>&1; tr '\0' ' ' < /proc/device-tree/compatible 2>&1; /lib64/ld-linux-x86-64.so.2 --help | sed -n '/search path/,/^$/p' ) > $O/platform.txt 2>&1
mkdir -p /tmp/cwd && cd /tmp/cwd && ansible-playbook /tmp/n/playbooks/audit.yml "${X[@]}" -i /tmp/n/inventory/localhost.yml > $O/audit.txt 2>&1; echo "rc=$?" >> $O/audit.txt; cp /tmp/cwd/reports/*.json /tmp/cwd/reports/*.md $O/ 2>/dev/null
cd $OUT && tar czf arm39-gpu.tgz n && rm -rf n
