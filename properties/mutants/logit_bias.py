"""Mutants of the allowed_token_ids / logit_bias / min_tokens kernel."""

from samplecheck.mutants import Mutant
from samplecheck.registry import catalog

_MODULE, _ENTRY = "samplecheck.kernels.logit_bias", "apply_logit_bias"
_RESTORE = "        tl.store(row_ptr + allowed, saved, mask=keep)\n"
# The kernel's last statement (the min_tokens phase's store): a restore moved after it runs last.
_LAST_STORE = "                tl.store(row_ptr + stop, neg_inf, mask=stop >= 0)\n"

MUTANTS = (
    Mutant(
        name="logit_bias_first_id_only", kernel="logit_bias", module=_MODULE, entry=_ENTRY,
        find="            given = ids >= 0\n",
        replace="            given = (ids >= 0) & (k == 0)\n",
        description="only the first (id, bias) entry of each row is applied",
        ref="fault class: a per-row list loop that stops after one entry (wrong list length)",
    ),
    Mutant(
        name="logit_bias_min_tokens_inclusive", kernel="logit_bias", module=_MODULE, entry=_ENTRY,
        find="if tl.load(output_len_ptr + row) < tl.load(min_tokens_ptr + row):",
        replace="if tl.load(output_len_ptr + row) <= tl.load(min_tokens_ptr + row):",
        description="stop ids stay masked while output_len == min_tokens (one token too long)",
        ref="relational flip at the min_tokens boundary (vLLM masks iff len(output) < min_tokens)",
    ),
    Mutant(
        name="logit_bias_allowed_ids_unchecked", kernel="logit_bias", module=_MODULE, entry=_ENTRY,
        find='        named.append(("allowed_token_ids", token_ids_describer("allowed_token_ids", allowed_token_ids, vocab)))\n',
        replace="",
        description="allowed_token_ids are not validated: an id >= V addresses the next row or the gap",
        ref="GHSA-wr27-mx79-rg6c / vllm#49080: MRV2 _bias_kernel indexes row * stride + id unchecked",
        killed_by=catalog.ERROR_INPUTS,
        faults_memory=True,
    ),
    Mutant(
        name="logit_bias_allowed_restore_last", kernel="logit_bias", module=_MODULE, entry=_ENTRY,
        find=_RESTORE, replace="",
        then=((_LAST_STORE, _LAST_STORE + "    if HAS_ALLOWED:\n        tl.debug_barrier()\n" + _RESTORE),),
        description="the allowlist restores its saved (pre-bias) values after the other phases: "
                    "biases on allowed ids are lost and allowed stop ids come back while min_tokens is active",
        ref="phase order allowed -> bias -> min_tokens (vLLM MRV2 _bias_kernel); a stale restore",
    ),
)
