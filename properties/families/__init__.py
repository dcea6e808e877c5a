"""Families of registry records: the behaviour records of one kind share (PyTorch OpInfo's
subclasses and family sample/error-input functions), so that a record in
`samplecheck.infos` is data.

- `masking`: top_k_top_p, min_p (`MaskingInfo`: kept-or--inf check, masked-input law; their cases).
- `values`: temperature, logit_bias, penalties, bad_words (`ValueInfo`: the oracle's exact
  output, its law, bitwise checks); the temperature cases softmax shares.
- `token_lists`: the cases of the ops whose arguments are token-id lists.
- `samplers`: gumbel_sample, and `sampler_of` for top_k_top_p_sample and min_p_sample.
- `logprobs`: logprobs' cases and check.
- `pipeline`: sampling_params, composed of the op records.
- `errors`: error-input sets (`call`, `logits_errors`, `rejected`).
- `rows`: per-row parameter pools.
"""
