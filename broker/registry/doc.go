// Package registry owns the broker's registry: which files a --config path or the
// --mcp-scope scopes select (docs/contract.md §8.2, §8.3), the rules a registry file must
// meet (a regular file of at most 1 MiB, read without blocking), the server entry
// schema (8.4), ${VAR} expansion, grants of foreign scopes, self-exclusion,
// transport fingerprints and the provenance explain reports. [Load] turns
// [Options] into a validated [Registry] or a [*ConfigError] whose message holds no
// configured value.
//
// It does not own what the registry is used for: connecting, calling, the
// allowlist check at call time and the reload schedule belong to package broker,
// which decides when to call Load and keeps the last result. Load reads at most
// four files and returns; it starts no process, goroutine or network request, so
// there is nothing to stop.
//
// Its contract is docs/contract.md §8.2 to §8.4.
package registry
