"""Adapters that expose third-party sampling libraries with the contracts of our registry
records, so they are verified by the same generic properties as our kernels. Each adapter
module imports its library inside the adapter functions (lazily): importing this package
never needs the library, and a missing library turns into skips with the reason."""
