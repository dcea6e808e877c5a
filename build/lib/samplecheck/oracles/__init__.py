"""Pure-PyTorch fp64 references. Each states its semantics in its docstring."""
