// Package plugin is the hayloft plugin protocol, hayloft.plugin.v1: gRPC
// services over hashicorp/go-plugin, one process per configured component.
//
// A plugin author registers components in an sdk.Set and hands it to Main:
//
//	func main() {
//		set := sdk.NewSet("acme", "1.0.0")
//		set.RegisterScorer("acme-match", newMatchScorer)
//		plugin.Main(set)
//	}
//
// The binary then answers `describe` (what it serves, as JSON) and `start
// <kind> <name>` (serve that component to the hayloft that started it). The
// hayloft binary serves its built-ins the same way through ServeComponent.
//
// The host side (Configure and the *Client types) turns a gRPC connection
// back into sdk.Task, sdk.Model, sdk.Scorer and sdk.Retriever. Errors keep
// their kind across the boundary (*sdk.ConfigError, *sdk.RetryableError,
// *sdk.RequestError, sdk.ErrUnsupported, context errors), a panic in
// component code becomes an error instead of a dead process, and a plugin
// process exits when its parent dies. Package sdk/sdktest runs all of it
// inside `go test`.
//
// Calls are cheap at high rates: Generate, Score, Retrieve and ScoreBatch
// calls of many concurrent callers share one Calls stream per component, and
// whatever has queued while a message was being sent, or queues while the
// sender yields once to the goroutines ready to run, goes out as the next
// message, in both directions (mux.go, mux_server.go); task samples travel
// the same way (SampleBatches). A lone call still goes out at once. Hosts
// fall back to the unary RPCs for plugins built before these existed, and
// send ScoreBatch on the stream only to plugins that report the feature
// (FeatureScoreBatchCall in ConfigureResponse.features). A batch of plain
// requests (samples of an id, targets and a language: `hayloft score`'s)
// travels packed in one bytes field to plugins that report
// FeaturePackedScoreBatch (packed.go).
//
// The wire types live in proto/hayloft/plugin/v1; scripts/gen-proto.sh
// regenerates them reproducibly.
package plugin
