#!/usr/bin/env bash
# Issue 13 on the real H200 host: does the audit's answer for "what torch loads" equal what a real torch process
# maps? Then break a copy of the venv on purpose and check that the audit flags it and torch really fails.
#
# Run from the repository root:  PY=/path/to/python-with-ansible OUT_DIR=/tmp/out lab/gpuhost/consumers.sh
#   PY          a python that can import the collection's plugins (stdlib only is enough; default python3)
#   OUT_DIR     where everything goes (default /tmp/gpufleet-consumers-out)
#   TORCH_VENV  the venv with torch (default /opt/torch/.venv)
#   AUDIT_ROOT  the root the audit reads (default /; a fixture tree to try the audit part elsewhere)
#   STEPS       steps to run (default: "audit torch ldconfig compare archs broken"); "audit" alone needs no GPU;
#               "archs" needs "audit" before it
# Writes under OUT_DIR: facts.json (nvidia_facts), findings.json, torch.json (the torch process), ldconfig.txt,
# compare.txt (PASS/FAIL lines), archs.txt (the archs step's lines), broken-facts.json, broken-findings.json,
# broken-torch.txt, summary.txt. Exits 1 when a PASS/FAIL line of this run says FAIL.
# Changes nothing outside /tmp: the broken venv is a copy under $WORK (hard links where /tmp and the venv share
# a filesystem, else links to every entry and a real copy of nvidia/cudnn/lib only), removed at the end.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
REPO=$PWD
PY=${PY:-python3}
OUT_DIR=${OUT_DIR:-/tmp/gpufleet-consumers-out}
TORCH_VENV=${TORCH_VENV:-/opt/torch/.venv}
AUDIT_ROOT=${AUDIT_ROOT:-/}
STEPS=${STEPS:-audit torch ldconfig compare archs broken}
WORK=$(mktemp -d /tmp/gpufleet-consumers.XXXXXX)
AC=$WORK/ac
mkdir -p "$OUT_DIR" "$AC/ansible_collections/gpufleet"
ln -sfn "$REPO" "$AC/ansible_collections/gpufleet/nvidia"
export LC_ALL=C PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
trap 'rm -rf "$WORK"' EXIT
rm -f "$OUT_DIR/compare.txt" "$OUT_DIR/archs.txt"

# audit ROOT OUTPREFIX [extra search path]: writes OUTPREFIXfacts.json and OUTPREFIXfindings.json;: nvidia_facts' code called directly, then the report's findings
audit() {
  PYTHONPATH=$AC "$PY" - "$1" "$2" "${3:-}" <<'EOF'
import json, sys, time
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.facts import gather
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import build, findings
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import consumers as report_consumers
root, prefix, extra = sys.argv[1], sys.argv[2], sys.argv[3]
started = time.monotonic()
facts = gather(root, cudnn_search_paths=[extra] if extra else [])
wall = time.monotonic() - started
entry = build.normalize_host("h200", "ok", facts)
entry.update(report_consumers.normalize(facts))
found = findings.host_findings(entry)
json.dump(facts, open(prefix + "facts.json", "w"), indent=1)
json.dump(found, open(prefix + "findings.json", "w"), indent=1)
print(f"gather: {wall:.3f} s (elapsed_ms {facts['elapsed_ms']}); probes: "
      + ", ".join(f"{k}={v['state']}" for k, v in facts["probes"].items()))
for env in facts["consumers"]["environments"]:
    for item in env["cudnn"]:
        print(f"  {env['kind']:12} {env['path']}: {item['for']} {item['soname']} -> {item['real_path']} "
              f"({item['version']}, via {item['via']}; mixed={item.get('mixed')})")
for f in found:
    if f["severity"] != "info" or f["code"] == "consumer_loads":
        print(f"  {f['severity']} {f['code']}: {f['message'][:300]}")
EOF
}

# torch_conv VENV: a cuDNN convolution on the GPU; what torch says and what the process has mapped
torch_conv() {
  local venv=$1 ldlp
  ldlp=$(PYTHONPATH=$AC "$PY" -c 'import json,sys; print(":".join(json.load(open(sys.argv[1]))["consumers"]["ld_library_path"].get("dirs", [])))' "$OUT_DIR/facts.json" 2>/dev/null)
  # the LD_LIBRARY_PATH a login shell gets, as the audit computed it (empty: none)
  env -u LD_LIBRARY_PATH ${ldlp:+LD_LIBRARY_PATH=$ldlp} timeout 120 "$venv/bin/python" - <<'EOF'
import json, importlib.metadata as md
out = {}
try:
    import torch
    out["torch"] = torch.__version__
    out["cuda"] = torch.version.cuda
    x = torch.randn(2, 3, 32, 32, device="cuda")
    conv = torch.nn.Conv2d(3, 8, 3).cuda()
    torch.backends.cudnn.enabled = True
    y = conv(x)
    torch.cuda.synchronize()
    out["conv"] = list(y.shape)
    out["cudnn_version"] = torch.backends.cudnn.version()
except Exception as exc:  # the broken copy: the error is the result
    out["error"] = f"{type(exc).__name__}: {exc}"
out["maps"] = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libcudnn" in l and "/" in l})
out["requires"] = [r for r in (md.requires("torch") or []) if r.lower().startswith("nvidia-cudnn")]
for name in ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12"):
    try:
        out.setdefault("installed", {})[name] = md.version(name)
    except md.PackageNotFoundError:
        pass
print(json.dumps(out, indent=1))
EOF
}

compare() {
  PYTHONPATH=$AC "$PY" - "$OUT_DIR" "$TORCH_VENV" <<'EOF'
import json, re, sys
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.consumers import spec_ok
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.ldcache import parse_ldconfig_p
out, venv = sys.argv[1], sys.argv[2]
facts = json.load(open(out + "/facts.json"))
torch = json.load(open(out + "/torch.json"))
envs = facts["consumers"]["environments"]
lines = []
def check(name, ok, detail):
    lines.append(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
fws = [f for e in envs if e["path"] == venv for f in e["frameworks"] if f["name"] == "torch"]
fw = fws[0] if fws else {}
loads = fw.get("loads") or {}
maps = [m for m in torch.get("maps", []) if re.search(r"/libcudnn\.so\.\d+", m)]
check("audit's torch libcudnn == /proc/<pid>/maps", loads.get("real_path") in maps and len(maps) == 1,
      f"audit {loads.get('real_path')} (via {loads.get('via')}); maps {maps}")
sub = [m for m in torch.get("maps", []) if m not in maps]
check("every mapped cuDNN sub-library is in the audit's directory",
      bool(sub) and all(m.rsplit("/", 1)[0] == loads.get("dir") for m in sub), f"dir {loads.get('dir')}; {sub}")
v = torch.get("cudnn_version")
runtime = f"{v // 10000}.{v % 10000 // 100}.{v % 100}" if isinstance(v, int) else None
check("audit's torch cuDNN version == torch.backends.cudnn.version()", runtime == loads.get("version"),
      f"audit {loads.get('version')}; torch {v}")
req = fw.get("requires_cudnn") or {}
meta = [r for r in torch.get("requires", [])]
spec = re.sub(r"\s|;.*$", "", meta[0]) if meta else ""
check("audit's pin == torch's metadata", bool(meta) and spec == f"{req.get('package')}{req.get('spec')}",
      f"audit {req}; metadata {meta}")
installed = (torch.get("installed") or {}).get(req.get("package"))
check("audit's pin check == the installed wheel against torch's metadata",
      fw.get("pin_satisfied") == spec_ok(installed, req.get("spec")) and installed == (fw.get("installed_cudnn") or {}).get("version"),
      f"audit pin_satisfied {fw.get('pin_satisfied')} ({fw.get('installed_cudnn')}); installed {installed}")
ld = {}
for soname, path, flags in parse_ldconfig_p(open(out + "/ldconfig.txt").read()):
    if "x86-64" in flags or "AArch64" in flags:
        ld.setdefault(soname, path)
ld = {k: v for k, v in ld.items() if re.match(r"^libcudnn\.so\.\d+$", k)}
system = {r["soname"]: r["path"] for e in envs if e["kind"] == "system" for r in e["cudnn"]}
check("audit's system linker cache answer == ldconfig -p", system == ld and bool(ld), f"audit {system}; ldconfig {ld}")
check("nvidia_facts under 0.5 s", facts["elapsed_ms"] < 500, f"elapsed_ms {facts['elapsed_ms']}")
open(out + "/compare.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
}

# archs: the audit's compiled_for of torch (read from libtorch_cuda.so's .nv_fatbin) == torch.cuda.get_arch_list();
# the fatbin read timed alone, with the default bounds and without them; nvidia_facts timed 3 times
archs() {
  "$TORCH_VENV/bin/python" -c 'import json, torch; print(json.dumps(torch.cuda.get_arch_list()))' \
    >"$WORK/arch_list.json" 2>"$OUT_DIR/archs.stderr"
  PYTHONPATH=$AC "$PY" - "$OUT_DIR" "$TORCH_VENV" "$WORK/arch_list.json" "$AUDIT_ROOT" <<'EOF' | tee "$OUT_DIR/archs.txt"
import glob, json, os, re, sys, time
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import fatbin
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.facts import gather
out, venv, arch_file, root = sys.argv[1:5]
facts = json.load(open(out + "/facts.json"))
fws = [f for e in facts["consumers"]["environments"] if e["path"] == venv for f in e["frameworks"]
       if f["name"] == "torch"]
fw = fws[0] if fws else {}
compiled = fw.get("compiled_for") or {}
try:
    torch_list = json.load(open(arch_file))
except (OSError, ValueError):
    torch_list = None

def cc(number):  # "90" -> "9.0", "100" -> "10.0", "120" -> "12.0"
    return f"{int(number) // 10}.{int(number) % 10}"

torch_sets = {"sm": set(), "ptx": set()}
for name in torch_list or []:  # 'sm_90', 'compute_90', 'sm_100a', 'sm_120f': an a/f variant counts as its number
    m = re.fullmatch(r"(sm|compute)_(\d+)[af]?", name)
    if m:
        torch_sets["sm" if m.group(1) == "sm" else "ptx"].add(cc(m.group(2)))
audit_sets = {"sm": set(compiled.get("sm") or []), "ptx": set(compiled.get("ptx") or [])}
def shown(values):
    return sorted(values, key=lambda v: tuple(int(p) for p in v.split(".")))

print(f"audit compiled_for: {compiled or fw.get('reasons', {}).get('compiled_for')}")
print(f"torch.cuda.get_arch_list(): {torch_list}")
for kind in ("sm", "ptx"):
    same = torch_list is not None and bool(compiled) and audit_sets[kind] == torch_sets[kind]
    print(f"{'PASS' if same else 'FAIL'} audit's compiled_for {kind} == torch.cuda.get_arch_list()'s: "
          f"audit {shown(audit_sets[kind])}; torch {shown(torch_sets[kind])}"
          f" (only in audit {shown(audit_sets[kind] - torch_sets[kind])},"
          f" only in torch {shown(torch_sets[kind] - audit_sets[kind])})")
inside = os.path.join(root, venv.lstrip("/"))
for path in sorted(glob.glob(inside + "/lib/python3*/site-packages/torch/lib/libtorch_cuda.so"))[:1]:
    for label, budget in (("default bounds", None),
                          ("no bounds", fatbin.Budget(seconds=600, max_reads=10**8, max_blobs=10**8))):
        started = time.monotonic()
        result, reason = fatbin.compute_capabilities(path, budget)
        ms = (time.monotonic() - started) * 1000
        counts = {k: v for k, v in (result or {}).items() if k not in ("sm", "ptx")}
        print(f"fatbin read of {path}, {label}: {ms:.1f} ms; {counts or reason}")
times = []
for _ in range(3):
    started = time.monotonic()
    gather(root)
    times.append((time.monotonic() - started) * 1000)
print(f"{'PASS' if max(times) < 500 else 'FAIL'} nvidia_facts under 0.5 s (3 runs): "
      + ", ".join(f"{t:.0f} ms" for t in times))
EOF
  grep -E '^(PASS|FAIL)' "$OUT_DIR/archs.txt" >>"$OUT_DIR/compare.txt"
}

broken() {
  local copy=$WORK/copy/.venv lib sp
  sp=$(cd "$TORCH_VENV" && for d in lib/python3*/site-packages; do echo "$d"; break; done)
  mkdir -p "$WORK/copy"
  if ! cp -al "$TORCH_VENV" "$copy" 2>/dev/null; then
    rm -rf "$copy"  # another filesystem: link every entry, copy only nvidia/cudnn/lib
    mkdir -p "$copy/$sp/nvidia/cudnn" "$copy/bin"
    for e in "$TORCH_VENV"/*; do [[ $(basename "$e") == lib || $(basename "$e") == bin ]] || ln -s "$e" "$copy/"; done
    for e in "$TORCH_VENV"/bin/*; do cp -P "$e" "$copy/bin/" 2>/dev/null || ln -s "$e" "$copy/bin/"; done
    for e in "$TORCH_VENV/$sp"/*; do [[ $(basename "$e") == nvidia ]] || ln -s "$e" "$copy/$sp/"; done
    for e in "$TORCH_VENV/$sp"/nvidia/*; do [[ $(basename "$e") == cudnn ]] || ln -s "$e" "$copy/$sp/nvidia/"; done
    for e in "$TORCH_VENV/$sp"/nvidia/cudnn/*; do [[ $(basename "$e") == lib ]] || ln -s "$e" "$copy/$sp/nvidia/cudnn/"; done
    cp -a "$TORCH_VENV/$sp/nvidia/cudnn/lib" "$copy/$sp/nvidia/cudnn/lib"
  fi
  lib=$copy/$sp/nvidia/cudnn/lib
  # BREAK: the sub-library replaced by the system's copy. libcudnn_ops.so.9 first (the issue's example): a torch
  # convolution on cuDNN 9.19 does not map it (2026-12-01: still worked); libcudnn_graph.so.9 it maps
  local name=${BREAK:-libcudnn_graph.so.9} sys_lib
  sys_lib=$(readlink -f "$(ldconfig -p | awk -v n="$name" '$1 == n && /x86-64/ {print $NF; exit}')")
  echo "copy: $copy; replacing $lib/$name with $sys_lib"
  rm -f "$lib/$name"  # a hard link to the original: remove it first, never write through it
  cp "$sys_lib" "$lib/$name"
  audit "$AUDIT_ROOT" "$OUT_DIR/broken-" "$WORK/copy"
  PYTHONPATH=$AC "$PY" - "$OUT_DIR" "$lib" <<'EOF' >>"$OUT_DIR/compare.txt"
import json, os, sys
out, lib = sys.argv[1], os.path.realpath(sys.argv[2])
facts = json.load(open(out + "/broken-facts.json"))
found = json.load(open(out + "/broken-findings.json"))
dirs = [d for d in facts["consumers"]["library_dirs"] if d["dir"] == lib]
mixed = [f for f in found if f["code"] == "cudnn_mixed_sub_libraries" and f"in {lib} come" in f["message"]]
print(f"{'PASS' if mixed and dirs and dirs[0]['mixed'] else 'FAIL'} broken copy: the audit flags the mixed directory: "
      f"{[(d['dir'], d['versions'], d['differs_from_record']) for d in dirs]}")
EOF
  torch_conv "$copy" >"$OUT_DIR/broken-torch.txt" 2>&1
  if grep -q '"error"' "$OUT_DIR/broken-torch.txt" || ! grep -q '"conv"' "$OUT_DIR/broken-torch.txt"; then
    echo "PASS broken copy: a torch convolution there fails: $(grep -m1 -E '"error"|Error' "$OUT_DIR/broken-torch.txt")" >>"$OUT_DIR/compare.txt"
  else
    echo "FAIL broken copy: a torch convolution there still works" >>"$OUT_DIR/compare.txt"
  fi
  tail -2 "$OUT_DIR/compare.txt"
}

for step in $STEPS; do
  echo "== $step"
  case $step in
    audit) audit "$AUDIT_ROOT" "$OUT_DIR/" ;;
    torch) torch_conv "$TORCH_VENV" >"$OUT_DIR/torch.json" 2>"$OUT_DIR/torch.stderr"; cat "$OUT_DIR/torch.json" ;;
    ldconfig) ldconfig -p | grep libcudnn | tee "$OUT_DIR/ldconfig.txt" ;;
    compare) compare ;;
    archs) archs ;;
    broken) broken ;;
    *) echo "unknown step $step" ;;
  esac
done 2>&1 | tee "$OUT_DIR/summary.txt"
! grep -qs '^FAIL' "$OUT_DIR/compare.txt" "$OUT_DIR/archs.txt"
