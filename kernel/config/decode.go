package config

import (
	"encoding/hex"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/gocty"

	"github.com/hayloft/hayloft/sdk"
)

// blockTypes are the top-level block types, in the order suggestions prefer.
var blockTypes = []string{"task", "model", "scorer", "retriever", "plugin", "eval"}

// kindExamples show a block header of each kind in error messages.
var kindExamples = map[sdk.Kind]string{
	sdk.KindTask:      `task "niah" "small"`,
	sdk.KindModel:     `model "openai" "local"`,
	sdk.KindScorer:    `scorer "rougel" "zh"`,
	sdk.KindRetriever: `retriever "bm25" "default"`,
}

// truncations are the accepted model truncation modes; the first is the default.
var truncations = []string{"middle", "left", "right", "none"}

// decoder accumulates diagnostics while it walks one file, so that a single
// run reports every problem rather than the first.
type decoder struct {
	filename string
	dir      string // absolute directory of the file
	opts     LoadOptions
	ctx      *hcl.EvalContext
	diags    hcl.Diagnostics
	cfg      *Config
	comps    map[string]*Component // declared components by Ref
	plugins  map[string]*Plugin
	evals    map[string]hcl.Range
	// synthetic holds the scorers named by bare strings, one per name, so
	// every eval naming "contains" shares one component.
	synthetic map[string]*Component
}

func newDecoder(filename string, opts LoadOptions) (*decoder, error) {
	dir, err := filepath.Abs(filepath.Dir(filename))
	if err != nil {
		return nil, fmt.Errorf("config %q: %w", filename, err)
	}
	env := make(map[string]string, len(opts.Env))
	for _, kv := range opts.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return &decoder{
		filename:  filename,
		dir:       dir,
		opts:      opts,
		ctx:       &hcl.EvalContext{Functions: functions(dir, env)},
		comps:     map[string]*Component{},
		plugins:   map[string]*Plugin{},
		evals:     map[string]hcl.Range{},
		synthetic: map[string]*Component{},
	}, nil
}

func (d *decoder) decode(src []byte) (*Config, error) {
	file, diags := hclsyntax.ParseConfig(src, d.filename, hcl.InitialPos)
	files := map[string]*hcl.File{d.filename: file}
	if diags.HasErrors() {
		// The partial tree of a file that does not parse yields follow-on
		// errors that only obscure the real one.
		return nil, &Error{Diags: diags, Files: files}
	}
	d.diags = diags
	body := file.Body.(*hclsyntax.Body)
	d.cfg = &Config{Path: d.filename, Source: src}

	fileSettings := d.decodeSettings(body.Attributes)
	settings, sdiags := layerSettings(fileSettings, d.opts.Env, d.opts.Flags)
	d.diags = append(d.diags, sdiags...)
	d.cfg.Settings = settings

	// Evals may refer to components declared after them, so they wait until
	// every component is known.
	var evals []*hclsyntax.Block
	for _, b := range body.Blocks {
		switch b.Type {
		case "plugin":
			d.decodePlugin(b)
		case "eval":
			evals = append(evals, b)
		default:
			if k := sdk.Kind(b.Type); slices.Contains(sdk.Kinds, k) {
				d.decodeComponent(k, b)
				continue
			}
			hint := didYouMean(b.Type, blockTypes)
			if hint == "" {
				hint = "; expected one of " + strings.Join(blockTypes, ", ")
			}
			d.errorf(b.TypeRange, "unknown block type %q%s", b.Type, hint)
		}
	}
	for _, b := range evals {
		d.decodeEval(b)
	}

	sortDiags(d.diags)
	if d.diags.HasErrors() {
		return nil, &Error{Diags: d.diags, Files: files}
	}
	return d.cfg, nil
}

func (d *decoder) errorf(r hcl.Range, format string, args ...any) {
	d.diags = d.diags.Append(&hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf(format, args...),
		Subject:  r.Ptr(),
	})
}

// value evaluates an attribute, recording HCL's own diagnostics.
func (d *decoder) value(attr *hclsyntax.Attribute) (cty.Value, bool) {
	v, diags := attr.Expr.Value(d.ctx)
	d.diags = append(d.diags, diags...)
	return v, !diags.HasErrors()
}

// decodeSettings reads the top-level attributes into the file layer of the
// settings.
func (d *decoder) decodeSettings(attrs hclsyntax.Attributes) map[string]any {
	out := map[string]any{}
	for _, attr := range sortedAttrs(attrs) {
		if !isSettingKey(attr.Name) {
			d.errorf(attr.NameRange, "unknown setting %q%s", attr.Name, didYouMean(attr.Name, settingKeys))
			continue
		}
		v, ok := d.value(attr)
		if !ok || v.IsNull() {
			continue
		}
		raw, err := ctyToJSON(v)
		if err == nil {
			// A plugin directory written in the file is relative to the file.
			raw, err = normalizeSetting(attr.Name, raw, d.dir)
		}
		if err != nil {
			d.errorf(attr.Expr.Range(), "%v", err)
			continue
		}
		out[attr.Name] = raw
	}
	return out
}

// checkLabels reports a block whose label count is not n.
func (d *decoder) checkLabels(b *hclsyntax.Block, n int, names, example string) bool {
	if len(b.Labels) == n {
		return true
	}
	r := b.DefRange()
	if len(b.Labels) > n {
		r = b.LabelRanges[n]
	}
	plural := "s"
	if n == 1 {
		plural = ""
	}
	d.errorf(r, "%s block needs %d label%s (%s), as in %s; got %d", b.Type, n, plural, names, example, len(b.Labels))
	return false
}

// noBlocks reports nested blocks where none are accepted.
func (d *decoder) noBlocks(b *hclsyntax.Block, what string) {
	for _, nb := range b.Body.Blocks {
		d.errorf(nb.TypeRange, "%s: nested blocks are not supported here (found %q)", what, nb.Type)
	}
}

func (d *decoder) decodePlugin(b *hclsyntax.Block) {
	if !d.checkLabels(b, 1, "the plugin's name", `plugin "acme"`) {
		return
	}
	p := &Plugin{Name: b.Labels[0], Range: b.DefRange()}
	what := fmt.Sprintf("plugin %q", p.Name)
	if prev, dup := d.plugins[p.Name]; dup {
		d.errorf(b.LabelRanges[0], "%s is already defined at %s", what, posString(prev.Range))
		return
	}
	d.plugins[p.Name] = p
	d.noBlocks(b, what)
	for _, attr := range sortedAttrs(b.Body.Attributes) {
		switch attr.Name {
		case "source":
			if s, ok := d.stringAttr(what, attr); ok {
				if s == "" {
					d.errorf(attr.Expr.Range(), "%s: source must not be empty", what)
					continue
				}
				if !filepath.IsAbs(s) {
					s = filepath.Join(d.dir, s)
				}
				p.Source = filepath.Clean(s)
			}
		case "sha256":
			if s, ok := d.stringAttr(what, attr); ok {
				s = strings.ToLower(s)
				if _, err := hex.DecodeString(s); err != nil || len(s) != 64 {
					d.errorf(attr.Expr.Range(), "%s: sha256 must be 64 hexadecimal digits, got %q", what, s)
					continue
				}
				p.SHA256 = s
			}
		default:
			d.errorf(attr.NameRange, "%s: unknown attribute %q%s", what, attr.Name,
				didYouMean(attr.Name, []string{"source", "sha256"}))
		}
	}
	if _, ok := b.Body.Attributes["source"]; !ok {
		d.errorf(b.DefRange(), "%s: source is required (the plugin binary's path)", what)
	}
	d.cfg.Plugins = append(d.cfg.Plugins, p)
}

func (d *decoder) decodeComponent(kind sdk.Kind, b *hclsyntax.Block) {
	if !d.checkLabels(b, 2, "component and instance", kindExamples[kind]) {
		return
	}
	c := &Component{
		Kind:       kind,
		Type:       b.Labels[0],
		Name:       b.Labels[1],
		Dir:        d.dir,
		DeclRange:  b.DefRange(),
		AttrRanges: map[string]hcl.Range{},
	}
	what := c.label()
	for i, l := range b.Labels {
		// Evals refer to components by traversal (model.openai.local), so a
		// label that is not an identifier could never be used.
		if !hclsyntax.ValidIdentifier(l) {
			d.errorf(b.LabelRanges[i], "%s: %q is not a valid name (letters, digits, underscores and dashes, not starting with a digit)", what, l)
		}
	}
	if prev, dup := d.comps[c.Ref()]; dup {
		d.errorf(b.DefRange(), "%s is already defined at %s", what, posString(prev.DeclRange))
		return
	}
	d.comps[c.Ref()] = c
	d.cfg.Components = append(d.cfg.Components, c)

	for _, nb := range b.Body.Blocks {
		d.errorf(nb.TypeRange, "%s: nested block %q is not supported in component blocks yet; write it as an object attribute: %s = { ... }", what, nb.Type, nb.Type)
	}
	if kind == sdk.KindModel {
		c.Model = &ModelSettings{MaxConcurrency: d.cfg.Settings.Concurrency, Truncation: truncations[0]}
	}
	opts := map[string]any{}
	for _, attr := range sortedAttrs(b.Body.Attributes) {
		c.AttrRanges[attr.Name] = attr.SrcRange
		switch {
		case attr.Name == "plugin":
			if s, ok := d.stringAttr(what, attr); ok {
				c.Plugin = s
			}
		case kind == sdk.KindModel && slices.Contains(modelAttrs, attr.Name):
			d.modelAttr(c, attr)
		default:
			v, ok := d.value(attr)
			if !ok || v.IsNull() {
				// null conventionally means "not set" in HCL: leave the
				// option to the component's default.
				continue
			}
			j, err := ctyToJSON(v)
			if err != nil {
				d.errorf(attr.Expr.Range(), "%s: option %q: %v", what, attr.Name, err)
				continue
			}
			opts[attr.Name] = j
		}
	}
	o, err := encodeOptions(opts)
	if err != nil {
		d.errorf(b.DefRange(), "%s: encode options: %v", what, err)
		return
	}
	c.Options = o
}

// modelAttrs are the kernel-level attributes of model blocks: the kernel
// schedules, truncates and caches by them, so they are never the plugin's.
var modelAttrs = []string{"max_concurrency", "initial_concurrency", "load_probe", "context_window", "prefix_cache_tokens", "server_slots", "truncation",
	"price_prompt_per_mtok", "price_completion_per_mtok", "temperature", "top_p", "max_tokens", "stop", "seed"}

// loadProbes are the servers whose queue the kernel can read.
var loadProbes = []string{"vllm", "llamacpp"}

// modelAttr decodes one of modelAttrs.
func (d *decoder) modelAttr(c *Component, attr *hclsyntax.Attribute) {
	m := c.Model
	what := c.label()
	switch attr.Name {
	case "max_concurrency":
		if n, ok := d.intAttr(what, attr, 1); ok {
			m.MaxConcurrency = int(n)
		}
	case "initial_concurrency":
		if n, ok := d.intAttr(what, attr, 1); ok {
			m.InitialConcurrency = int(n)
		}
	case "load_probe":
		if s, ok := d.stringAttr(what, attr); ok {
			if !slices.Contains(loadProbes, s) {
				d.errorf(attr.Expr.Range(), "%s: load_probe %q is not one of %s%s", what, s,
					strings.Join(loadProbes, ", "), didYouMean(s, loadProbes))
				break
			}
			m.LoadProbe = s
		}
	case "context_window":
		if n, ok := d.intAttr(what, attr, 0); ok {
			m.ContextWindow = int(n)
		}
	case "prefix_cache_tokens":
		if n, ok := d.intAttr(what, attr, 1); ok {
			m.PrefixCacheTokens = int(n)
		}
	case "server_slots":
		if n, ok := d.intAttr(what, attr, 1); ok {
			m.ServerSlots = int(n)
		}
	case "price_prompt_per_mtok":
		if f, ok := d.floatAttr(what, attr, 0, math.Inf(1)); ok {
			m.PricePromptPerMTok = f
		}
	case "price_completion_per_mtok":
		if f, ok := d.floatAttr(what, attr, 0, math.Inf(1)); ok {
			m.PriceCompletionPerMTok = f
		}
	case "max_tokens":
		if n, ok := d.intAttr(what, attr, 0); ok {
			m.Params.MaxTokens = int(n)
		}
	case "seed":
		if n, ok := d.intAttr(what, attr, math.MinInt64); ok {
			m.Params.Seed = &n
		}
	case "temperature":
		if f, ok := d.floatAttr(what, attr, 0, math.Inf(1)); ok {
			m.Params.Temperature = &f
		}
	case "top_p":
		if f, ok := d.floatAttr(what, attr, 0, 1); ok {
			m.Params.TopP = &f
		}
	case "truncation":
		if s, ok := d.enumAttr(what, attr, truncations); ok {
			m.Truncation = s
		}
	case "stop":
		v, ok := d.value(attr)
		if !ok || v.IsNull() {
			break
		}
		l, err := convert.Convert(v, cty.List(cty.String))
		if err != nil || !l.IsWhollyKnown() {
			d.errorf(attr.Expr.Range(), "%s: stop must be a list of strings, got %s", what, describeValue(v))
			break
		}
		stop := []string{}
		for it := l.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.IsNull() {
				d.errorf(attr.Expr.Range(), "%s: stop must not contain null", what)
				return
			}
			stop = append(stop, e.AsString())
		}
		m.Params.Stop = stop
	}
}

// intAttr decodes a whole number of at least lo. Numeric strings are accepted,
// as HCL converts them everywhere else, so env("N") works.
func (d *decoder) intAttr(what string, attr *hclsyntax.Attribute, lo int64) (int64, bool) {
	v, ok := d.value(attr)
	if !ok || v.IsNull() {
		return 0, false
	}
	var n int64
	num, err := convert.Convert(v, cty.Number)
	if err == nil {
		err = gocty.FromCtyValue(num, &n)
	}
	if err != nil || n < lo {
		want := "a whole number"
		if lo != math.MinInt64 {
			want += " ≥ " + strconv.FormatInt(lo, 10)
		}
		d.errorf(attr.Expr.Range(), "%s: %s must be %s, got %s", what, attr.Name, want, describeValue(v))
		return 0, false
	}
	return n, true
}

// floatAttr decodes a number in [lo, hi].
func (d *decoder) floatAttr(what string, attr *hclsyntax.Attribute, lo, hi float64) (float64, bool) {
	v, ok := d.value(attr)
	if !ok || v.IsNull() {
		return 0, false
	}
	var f float64
	num, err := convert.Convert(v, cty.Number)
	if err == nil {
		err = gocty.FromCtyValue(num, &f)
	}
	if err != nil || f < lo || f > hi || math.IsNaN(f) {
		rng := fmt.Sprintf("between %g and %g", lo, hi)
		if math.IsInf(hi, 1) {
			rng = fmt.Sprintf("≥ %g", lo)
		}
		d.errorf(attr.Expr.Range(), "%s: %s must be a number %s, got %s", what, attr.Name, rng, describeValue(v))
		return 0, false
	}
	return f, true
}

// enumAttr decodes a string attribute that must be one of allowed.
func (d *decoder) enumAttr(what string, attr *hclsyntax.Attribute, allowed []string) (string, bool) {
	s, ok := d.stringAttr(what, attr)
	if !ok {
		return "", false
	}
	if !slices.Contains(allowed, s) {
		d.errorf(attr.Expr.Range(), "%s: %s %q is not one of %s%s", what, attr.Name, s,
			strings.Join(allowed, ", "), didYouMean(s, allowed))
		return "", false
	}
	return s, true
}

func (d *decoder) stringAttr(what string, attr *hclsyntax.Attribute) (string, bool) {
	v, ok := d.value(attr)
	if !ok || v.IsNull() {
		return "", false
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil || !s.IsKnown() {
		d.errorf(attr.Expr.Range(), "%s: %s must be a string, got %s", what, attr.Name, describeValue(v))
		return "", false
	}
	return s.AsString(), true
}

// describeValue renders a value for an error message: short scalars as
// written, anything else by its type.
func describeValue(v cty.Value) string {
	if !v.IsKnown() || v.IsNull() {
		return v.Type().FriendlyName()
	}
	switch v.Type() {
	case cty.String:
		return strconv.Quote(v.AsString())
	case cty.Number:
		return v.AsBigFloat().Text('g', -1)
	case cty.Bool:
		return strconv.FormatBool(v.True())
	}
	return v.Type().FriendlyName()
}

// sortedAttrs returns a body's attributes in file order: hclsyntax keeps them
// in a map, and diagnostics must come out in a stable order.
func sortedAttrs(attrs hclsyntax.Attributes) []*hclsyntax.Attribute {
	out := make([]*hclsyntax.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SrcRange.Start.Byte < out[j].SrcRange.Start.Byte })
	return out
}

// sortDiags orders diagnostics by position; those without one (environment
// and flag problems) come first.
func sortDiags(diags hcl.Diagnostics) {
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		switch {
		case a == nil || b == nil:
			return a == nil && b != nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		}
		return a.Start.Byte < b.Start.Byte
	})
}
