package config

import (
	"os/exec"
	"runtime"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions is the function table of config expressions: a subset of go-cty's
// stdlib chosen for building option values (no time or randomness, so a file
// always decodes to the same options), plus env and file_dir.
func functions(dir string, env map[string]string) map[string]function.Function {
	return map[string]function.Function{
		// numbers
		"abs":      stdlib.AbsoluteFunc,
		"ceil":     stdlib.CeilFunc,
		"floor":    stdlib.FloorFunc,
		"log":      stdlib.LogFunc,
		"max":      stdlib.MaxFunc,
		"min":      stdlib.MinFunc,
		"parseint": stdlib.ParseIntFunc,
		"pow":      stdlib.PowFunc,
		"signum":   stdlib.SignumFunc,
		// collections
		"chunklist": stdlib.ChunklistFunc,
		"coalesce":  stdlib.CoalesceFunc,
		"compact":   stdlib.CompactFunc,
		"concat":    stdlib.ConcatFunc,
		"contains":  stdlib.ContainsFunc,
		"distinct":  stdlib.DistinctFunc,
		"element":   stdlib.ElementFunc,
		"flatten":   stdlib.FlattenFunc,
		"index":     stdlib.IndexFunc,
		"keys":      stdlib.KeysFunc,
		"length":    stdlib.LengthFunc,
		"lookup":    stdlib.LookupFunc,
		"merge":     stdlib.MergeFunc,
		"range":     stdlib.RangeFunc,
		"reverse":   stdlib.ReverseListFunc,
		"slice":     stdlib.SliceFunc,
		"sort":      stdlib.SortFunc,
		"values":    stdlib.ValuesFunc,
		"zipmap":    stdlib.ZipmapFunc,
		// strings
		"chomp":         stdlib.ChompFunc,
		"format":        stdlib.FormatFunc,
		"formatlist":    stdlib.FormatListFunc,
		"indent":        stdlib.IndentFunc,
		"join":          stdlib.JoinFunc,
		"lower":         stdlib.LowerFunc,
		"regex":         stdlib.RegexFunc,
		"regexall":      stdlib.RegexAllFunc,
		"regex_replace": stdlib.RegexReplaceFunc,
		"replace":       stdlib.ReplaceFunc,
		"split":         stdlib.SplitFunc,
		"strlen":        stdlib.StrlenFunc,
		"strrev":        stdlib.ReverseFunc,
		"substr":        stdlib.SubstrFunc,
		"title":         stdlib.TitleFunc,
		"trim":          stdlib.TrimFunc,
		"trimprefix":    stdlib.TrimPrefixFunc,
		"trimspace":     stdlib.TrimSpaceFunc,
		"trimsuffix":    stdlib.TrimSuffixFunc,
		"upper":         stdlib.UpperFunc,
		// encoding and conversion
		"csvdecode":  stdlib.CSVDecodeFunc,
		"jsondecode": stdlib.JSONDecodeFunc,
		"jsonencode": stdlib.JSONEncodeFunc,
		"tobool":     stdlib.MakeToFunc(cty.Bool),
		"tolist":     stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap":      stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"tonumber":   stdlib.MakeToFunc(cty.Number),
		"toset":      stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tostring":   stdlib.MakeToFunc(cty.String),
		"can":        tryfunc.CanFunc,
		"try":        tryfunc.TryFunc,
		// hayloft
		"env":      envFunc(env, false),
		"env_or":   envFunc(env, true),
		"file_dir": fileDirFunc(dir),
		"goroot":   gorootFunc(env),
	}
}

// envFunc reads a variable from the load environment. An unset variable is an
// error rather than "": a silently empty path or model name fails much later
// and further from its cause. Secrets are refused because options are
// journaled and hashed into cache keys; plugins read them through settings
// like api_key_env instead.
// With fallback (env_or), a second argument is the value when it is unset.
func envFunc(env map[string]string, fallback bool) function.Function {
	params := []function.Parameter{{Name: "name", Type: cty.String}}
	desc := "Returns the value of an environment variable; errors when it is unset."
	if fallback {
		params = append(params, function.Parameter{Name: "default", Type: cty.String})
		desc = "Returns the value of an environment variable, or the default when it is unset or empty."
	}
	return function.New(&function.Spec{
		Description: desc,
		Params:      params,
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			name := args[0].AsString()
			if looksSecret(name) {
				return cty.NilVal, function.NewArgErrorf(0,
					"env(%q) looks like a secret; secrets must not enter the config, which is journaled: let the plugin read it (e.g. api_key_env = %q)", name, name)
			}
			v, ok := env[name]
			if fallback && v == "" {
				return args[1], nil
			}
			if !ok {
				return cty.NilVal, function.NewArgErrorf(0, "environment variable %q is not set", name)
			}
			return cty.StringVal(v), nil
		},
	})
}

// looksSecret reports whether an environment variable's name has a word that
// conventionally marks a credential.
func looksSecret(name string) bool {
	for _, w := range strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool { return r == '_' || r == '-' }) {
		switch w {
		case "KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIALS":
			return true
		}
	}
	return false
}

// fileDirFunc returns the absolute directory of the config file, for options
// that must name files next to it whatever the plugin's working directory.
func fileDirFunc(dir string) function.Function {
	return function.New(&function.Spec{
		Description: "Returns the absolute directory of the configuration file.",
		Type:        function.StaticReturnType(cty.String),
		Impl: func(_ []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.StringVal(dir), nil
		},
	})
}

// gorootFunc returns the Go installation's root, where Go ships public-domain
// texts (src/testdata/Isaac.Newton-Opticks.txt) that make good demo haystacks.
// $GOROOT wins, then `go env GOROOT`, then the root this binary was built with.
// A load looks it up once, however often the file calls it: `go env GOROOT`
// is a subprocess of some 40 ms.
func gorootFunc(env map[string]string) function.Function {
	root := sync.OnceValue(func() string {
		if v := env["GOROOT"]; v != "" {
			return v
		}
		if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
			if v := strings.TrimSpace(string(out)); v != "" {
				return v
			}
		}
		//lint:ignore SA1019 the build-time root is the last resort, not the first.
		return runtime.GOROOT()
	})
	return function.New(&function.Spec{
		Description: "Returns the root of the Go installation.",
		Type:        function.StaticReturnType(cty.String),
		Impl: func(_ []cty.Value, _ cty.Type) (cty.Value, error) {
			if v := root(); v != "" {
				return cty.StringVal(v), nil
			}
			return cty.NilVal, function.NewArgErrorf(0, "cannot find the Go root: set GOROOT")
		},
	})
}
