package plugin

import (
	"context"
	"strconv"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
)

// ProtocolVersion is the version of the hayloft plugin protocol this SDK
// speaks; Protocol is its name as plugins describe it.
const (
	ProtocolVersion = 1
	Protocol        = "hayloft.plugin.v1"
)

// MaxMessageSize bounds one gRPC message either way. A 1M-token context is
// about 4 MB of text and a sample may be sent with its context and its
// rendered messages, so this leaves a wide margin.
const MaxMessageSize = 256 << 20

// Names of the optional interfaces a configured component reports.
const (
	CapAggregator = "aggregator"
	CapTokenizer  = "tokenizer"
	CapValidator  = "validator"
	CapCloser     = "closer"
	CapSample     = "sample" // sdk.SampleReader
)

// Protocol features a plugin reports in its ConfigureResponse: what its SDK
// serves beyond the protocol version's first form. A host uses a feature
// only when the plugin reports it, so plugins built before it (and SDKs in
// other languages that do not serve it) keep working unchanged.
const (
	// FeatureScoreBatchCall: ScoreBatch calls ride the Calls stream, so a
	// batch of scores costs one stream message instead of a unary RPC
	// (a new HTTP/2 stream with its headers, a goroutine each side).
	FeatureScoreBatchCall = "calls.score_batch"
	// FeaturePackedScoreBatch: ScoreBatch takes a batch of plain requests
	// (samples of an id, targets and a language) packed in one bytes
	// field, decoded without a message or string allocation per request.
	FeaturePackedScoreBatch = "score_batch.packed"
)

// servedFeatures are the features this SDK's server reports.
var servedFeatures = []string{FeatureScoreBatchCall, FeaturePackedScoreBatch}

// PluginKey is the name under which the component is dispensed over
// go-plugin.
const PluginKey = "component"

const (
	magicCookieKey   = "HAYLOFT_PLUGIN"
	magicCookieValue = "4c1d0e5b-hayloft-plugin-1b7f"
)

// protocolVersionOverride lets protocol tests build a plugin that speaks
// another version: go build -ldflags "-X
// github.com/hayloft/hayloft/sdk/plugin.protocolVersionOverride=2". Only the
// plugin side reads it; the host always speaks ProtocolVersion.
var protocolVersionOverride string

func servedVersion() int {
	if v, err := strconv.Atoi(protocolVersionOverride); err == nil && v > 0 {
		return v
	}
	return ProtocolVersion
}

func protocolName() string { return ProtocolName(servedVersion()) }

// ProtocolName names protocol version v, e.g. "hayloft.plugin.v1".
func ProtocolName(v int) string { return "hayloft.plugin.v" + strconv.Itoa(v) }

// Handshake is the go-plugin handshake a host uses to start a plugin.
func Handshake() goplugin.HandshakeConfig {
	return goplugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   magicCookieKey,
		MagicCookieValue: magicCookieValue,
	}
}

// ClientPlugins is the go-plugin plugin set a host passes in
// ClientConfig.Plugins; dispensing PluginKey yields a *Conn to hand to
// Configure.
func ClientPlugins() goplugin.PluginSet {
	return goplugin.PluginSet{PluginKey: &grpcPlugin{}}
}

// DialOptions are the gRPC client options matching ServerOptions; a host
// passes them in ClientConfig.GRPCDialOptions.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(MaxMessageSize),
		grpc.MaxCallSendMsgSize(MaxMessageSize),
		grpc.ForceCodecV2(codec{}),
	), experimental.WithBufferPool(bufferPool),
		grpc.WithReadBufferSize(transportBuffer), grpc.WithWriteBufferSize(transportBuffer),
		grpc.WithInitialWindowSize(flowWindow), grpc.WithInitialConnWindowSize(flowWindow)}
}

// The transport settings of both ends. A plugin is a local process, so
// flow control has no network to protect: a window of a few MiB lets a
// batch of a few hundred KiB go in one go instead of waiting for window
// updates every 64 KiB, and buffers of 256 KiB read and write it in a few
// system calls instead of one per 32 KiB.
const (
	transportBuffer = 256 << 10
	flowWindow      = 4 << 20
)

// grpcPlugin adapts Server to go-plugin. The interface knows nothing of RPC;
// this is the shim.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	server *Server // nil on the host side
}

func (p *grpcPlugin) GRPCServer(broker *goplugin.GRPCBroker, g *grpc.Server) error {
	p.server.broker = broker
	p.server.Register(g)
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, broker *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &Conn{ClientConn: conn, broker: broker}, nil
}
