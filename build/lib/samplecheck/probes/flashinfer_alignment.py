"""Probe, each in a fresh subprocess, how FlashInfer's logits-consuming APIs treat a
contiguous fp32 view at storage offset 5 (20 bytes: not 16-byte aligned) and a row-padded
view, calling the raw API (not our adapters, which refuse misaligned launches).

    python -m samplecheck.probes.flashinfer_alignment      (GPU with flashinfer installed)

Prints one line per (API, layout): "ok, equal to the contiguous call", "ok, DIFFERENT",
"raised <error>", or "process died (rc)".
"""

import subprocess
import sys

CHILD = r'''
import sys, torch, flashinfer.sampling as fs
api, layout = sys.argv[1], sys.argv[2]
B, V = 4, 4096
g = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(B, V, generator=g, device="cuda")
if layout == "offset":
    buf = torch.full((B * V + 5,), float("nan"), device="cuda"); view = buf[5:].view(B, V)
else:
    buf = torch.full((B, V + 64), float("nan"), device="cuda"); view = buf[:, :V]
view.copy_(x)
k = torch.full((B,), 10, dtype=torch.int32, device="cuda")
call = {"top_k_mask_logits": lambda t: fs.top_k_mask_logits(t, k),
        "sampling_from_logits": lambda t: fs.sampling_from_logits(t, seed=1, offset=0),
        "softmax": lambda t: fs.softmax(t, temperature=torch.full((B,), 0.7, device="cuda")),
        "top_k_top_p_sampling_from_logits": lambda t: fs.top_k_top_p_sampling_from_logits(
            t, k, torch.full((B,), 0.9, device="cuda"), seed=1, offset=0)}[api]
try:
    got = call(view); torch.cuda.synchronize()
except Exception as e:
    print(f"raised {type(e).__name__}: {str(e).splitlines()[0][:160]}"); sys.exit(0)
want = call(x); torch.cuda.synchronize()
print("ok, equal to the contiguous call" if torch.equal(got, want) else "ok, DIFFERENT from the contiguous call")
'''


def main() -> None:
    for api in ("top_k_mask_logits", "sampling_from_logits", "softmax", "top_k_top_p_sampling_from_logits"):
        for layout in ("offset", "padded64"):
            r = subprocess.run([sys.executable, "-c", CHILD, api, layout], capture_output=True, text=True, timeout=300)
            tail = (r.stdout.strip().splitlines() or [""])[-1]
            if r.returncode != 0:
                err = (r.stderr.strip().splitlines() or [""])[-1][:200]
                tail = f"process died (rc {r.returncode}): {err}"
            print(f"{api:36s} fp32 {layout:9s} {tail}", flush=True)


if __name__ == "__main__":
    main()
