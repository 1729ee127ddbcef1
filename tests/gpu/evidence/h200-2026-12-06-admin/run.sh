#!/usr/bin/env bash
# on the device: unpack branch next, run probes; outputs into $OUT/n/*.txt then one tar
set -u
mkdir -p /tmp/n $OUT/n && tar xzf next-src.tar.gz -C /tmp/n && cp -r .whl /tmp/n/.whl
cd /tmp/n && mkdir -p .collections/ansible_collections/gpufleet && ln -sfn ../../.. .collections/ansible_collections/gpufleet/nvidia
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH LC_ALL=C.UTF-8 ANSIBLE_FORCE_COLOR=0 ANSIBLE_CONFIG=/tmp/n/ansible.cfg ANSIBLE_COLLECTIONS_PATH=/tmp/n/.collections
py=$(command -v python3); X=(-e "ansible_python_interpreter=$py" -e ansible_become=false)
O=$OUT/n
( ls -la /etc/apt/sources.list.d/ /usr/share/keyrings/ /etc/apt/keyrings/; for f in /etc/apt/sources.list.d/*; do echo "== $f"; cat "$f"; done; dpkg -S /etc/apt/sources.list.d/* 2>&1; dpkg -l | grep -E "cuda-keyring|cuda-toolkit-13|libcublas-13|libcudnn9" ) > $O/host.txt 2>&1
ansible localhost "${X[@]}" -m gpufleet.nvidia.nvidia_facts -a '{"gather_subset":["sources","gpu"]}' > $O/facts-sources.txt 2>&1; echo "rc=$?" >> $O/facts-sources.txt
ansible-playbook playbooks/cudnn.yml "${X[@]}" --check --diff -e gpufleet_cudnn_hosts=localhost -e '{"cudnn_source":"nvidia_repo","cudnn_version":"9.14.0.64","cudnn_cuda_major":13}' > $O/cudnn-adopt-check.txt 2>&1; echo "rc=$?" >> $O/cudnn-adopt-check.txt
ansible-playbook playbooks/cuda.yml "${X[@]}" --check --diff -e gpufleet_cuda_hosts=localhost -e '{"cuda_toolkit_source":"nvidia_repo","cuda_toolkit_versions":["13.0"]}' > $O/cuda-adopt-check.txt 2>&1; echo "rc=$?" >> $O/cuda-adopt-check.txt
ansible-playbook playbooks/preflight.yml "${X[@]}" -e '{"cuda_toolkit_versions":["13.0"],"cudnn_version":"9.14.0","cudnn_cuda_major":13,"nvidia_driver_branch":"580"}' > $O/preflight.txt 2>&1; echo "rc=$?" >> $O/preflight.txt
ansible-playbook playbooks/site.yml "${X[@]}" --check -e '{"nvidia_driver_enabled":false,"cudnn_enabled":false,"cuda_toolkit_source":"nvidia_repo","cuda_toolkit_versions":["13.0"]}' > $O/site-switches-check.txt 2>&1; echo "rc=$?" >> $O/site-switches-check.txt
GPUFLEET_EXPECT_GPU=H200 GPUFLEET_EXPECT_CUDNN=9.14.0 python3 -m pytest -p no:cacheprovider -rA --hosts=local:// tests/gpu > $O/gpu-tests.txt 2>&1; echo "rc=$?" >> $O/gpu-tests.txt
mkdir -p /tmp/cwd && cd /tmp/cwd && ansible-playbook /tmp/n/playbooks/audit.yml "${X[@]}" -i /tmp/n/inventory/localhost.yml > $O/audit.txt 2>&1; echo "rc=$?" >> $O/audit.txt; ls -la /tmp/cwd/reports >> $O/audit.txt 2>&1; cp /tmp/cwd/reports/*.json /tmp/cwd/reports/*.md $O/ 2>/dev/null
git -C /tmp/n log -1 >/dev/null 2>&1; cd $OUT && tar czf next-h200.tgz n && rm -rf n
