package pluginhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
)

// startTimeout is Options.StartTimeout's default.
const startTimeout = time.Minute

// process is one running plugin process serving one configured component.
type process struct {
	client *goplugin.Client
	remote plugin.Component
}

func (p *process) exited() bool { return p.client.Exited() }

// kill ends the process and waits for it. go-plugin asks the plugin to shut
// down first and kills it if it does not within two seconds.
func (p *process) kill() { p.client.Kill() }

// launch starts src serving kind/name and configures it with opts.
func (h *Host) launch(ctx context.Context, src *Source, kind sdk.Kind, name string, opts sdk.Options) (*process, error) {
	if !src.Builtin {
		if _, err := checkBinary(src); err != nil {
			return nil, err
		}
		// Hash right before starting, so a binary swapped since describe is
		// still caught.
		if _, err := verifySHA256(src); err != nil {
			return nil, err
		}
	}
	logger := h.logger.Named(src.Name)
	tail := &stderrTail{}
	cmd := exec.Command(src.Path, startArgs(src, string(kind), name)...)
	cmd.Env = append(os.Environ(), plugin.LogLevelEnv+"="+logLevel(h.logger))
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  plugin.Handshake(),
		Plugins:          plugin.ClientPlugins(),
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Managed:          true,
		Logger:           logger,
		// What the plugin prints to os.Stderr outside hclog (fmt.Fprintln,
		// a library's log package) arrives here, not in the log stream.
		SyncStderr: logger.StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true}),
		SyncStdout: logger.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Info}),
		// The plugin's last words, for a start-up failure's message.
		Stderr:          tail,
		GRPCDialOptions: plugin.DialOptions(),
		StartTimeout:    h.opts.StartTimeout,
	})
	// Start and Dispense take no context; killing the client is how a
	// cancelled launch is abandoned.
	stop := context.AfterFunc(ctx, client.Kill)
	defer stop()

	fail := func(err error) (*process, error) {
		client.Kill()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: start %s %q: %w", src, kind, name, ctx.Err())
		}
		return nil, err
	}
	rpc, err := client.Client()
	if err != nil {
		// The plugin's last words are read only once go-plugin has read
		// all of its stderr: Kill waits for that reader. go-plugin
		// returns as soon as stdout closes, and a plugin that exits
		// before its handshake closes both at once, so the reader may
		// not have reached the line that says why (seen under load).
		client.Kill()
		return fail(startError(src, kind, name, err, tail.last()))
	}
	raw, err := rpc.Dispense(plugin.PluginKey)
	if err != nil {
		return fail(fmt.Errorf("%s: start %s %q: %w", src, kind, name, err))
	}
	conn, ok := raw.(*plugin.Conn)
	if !ok {
		return fail(fmt.Errorf("%s: start %s %q: dispensed %T, not a plugin connection", src, kind, name, raw))
	}
	co := plugin.ConfigureOptions{CheckOnly: h.opts.CheckOnly}
	if cache := h.embeddingCache(); cache != nil && !h.opts.CheckOnly && kind == sdk.KindRetriever {
		co.EmbeddingCache = conn.ServeEmbeddingCache(cache, logger)
	}
	remote, err := plugin.ConfigureWith(ctx, conn, kind, name, opts, co)
	if err != nil {
		return fail(fmt.Errorf("%s: configure %s %q: %w", src, kind, name, err))
	}
	if !stop() {
		// ctx was cancelled just now and the kill is under way.
		return fail(fmt.Errorf("%s: start %s %q: %w", src, kind, name, context.Cause(ctx)))
	}
	return &process{client: client, remote: remote}, nil
}

func logLevel(l hclog.Logger) string {
	lv := l.GetLevel()
	if lv == hclog.NoLevel {
		lv = hclog.Info
	}
	return lv.String()
}

// go-plugin words a handshake version mismatch as "incompatible API version
// with plugin. Plugin version: 2, Client versions: [1]".
var versionMismatch = regexp.MustCompile(`incompatible API version with plugin\. Plugin version: (\d+)`)

// startError rewords go-plugin's start-up failures for hayloft's users, in
// one line. last is the plugin's last line on stderr, which for a plugin
// that exited before the handshake is usually why.
func startError(src *Source, kind sdk.Kind, name string, err error, last string) error {
	msg := err.Error()
	if strings.Contains(msg, "Unrecognized remote plugin message") || strings.Contains(msg, "plugin exited before we could connect") {
		// go-plugin's text runs over several lines of generic advice.
		if last != "" {
			return fmt.Errorf("%s: start %s %q: exited before the handshake: %s", src, kind, name, last)
		}
		return fmt.Errorf("%s: start %s %q: exited before the handshake", src, kind, name)
	}
	if m := versionMismatch.FindStringSubmatch(msg); m != nil {
		v, _ := strconv.Atoi(m[1])
		return fmt.Errorf("plugin %q speaks %s, this hayloft speaks %s", src.Name, plugin.ProtocolName(v), plugin.Protocol)
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return fmt.Errorf("plugin %q: cannot run %s: %v", src.Name, src.Path, ee.Err)
	}
	return fmt.Errorf("%s: start %s %q: %w", src, kind, name, err)
}

// stderrTail keeps the last non-empty line a plugin wrote to stderr: the
// message of an hclog JSON entry, or the raw line.
type stderrTail struct {
	mu   sync.Mutex
	line string
}

// Write receives one line at a time, without its newline, from go-plugin.
func (t *stderrTail) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	if line == "" {
		return len(p), nil
	}
	var entry struct {
		Message string `json:"@message"`
	}
	if json.Unmarshal([]byte(line), &entry) == nil && entry.Message != "" {
		line = entry.Message
	}
	t.mu.Lock()
	t.line = line
	t.mu.Unlock()
	return len(p), nil
}

func (t *stderrTail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.line
}
