// Package config reads a hayloft configuration file: HCL with labeled blocks
// for plugins, components (task, model, scorer, retriever) and evals.
//
// The package separates what the kernel owns from what a component owns. The
// kernel decodes and validates its own attributes (plugin on every component
// block; max_concurrency, context_window, truncation and the generation
// parameters on model blocks). Every other attribute of a component block is
// passed through untouched as the component's sdk.Options, a JSON object the
// component decodes strictly itself. The range of each such attribute is kept
// so that a *sdk.ConfigError coming back from a plugin can be pointed at the
// line that set the option (Component.Diag).
//
// Eval blocks are not evaluated as expressions: their references
// (task.niah.small) are read as traversals, so that a reference to a missing
// component is reported with the nearest existing one rather than as an
// unknown variable.
//
// Kernel settings (store, log_level, plugin_dir, concurrency) are layered
// with koanf: built-in defaults, then the file's top-level attributes, then
// HAYLOFT_* environment variables (HAYLOFT_STORE, HAYLOFT_LOG_LEVEL,
// HAYLOFT_PLUGIN_DIR, HAYLOFT_CONCURRENCY), then flags.
//
// Expressions may call a deterministic subset of go-cty's stdlib, env("NAME")
// (an error when unset, and refused for names that look like credentials:
// options are journaled, so secrets stay with the plugin via api_key_env) and
// file_dir(), the absolute directory of the config file.
//
// Every problem found is reported, each with its file:line:col, in one *Error.
package config
