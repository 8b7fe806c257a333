// Command acme-plugin is an example of an external hayloft plugin: a binary
// of its own, importing only hayloft's sdk, that serves a task and a scorer.
//
//	go build -o acme-plugin ./examples/plugin-acme
//	hayloft plugins examples/plugin-acme/acme.hcl
package main

import (
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
)

func main() {
	plugin.Main(newSet())
}

func newSet() *sdk.Set {
	set := sdk.NewSet("acme", "1.0.0")
	set.RegisterTask("arith", newArith)
	set.RegisterScorer("numeric", newNumeric)
	return set
}
