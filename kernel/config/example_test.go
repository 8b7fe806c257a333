package config_test

import (
	"fmt"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/sdk"
)

func ExampleParse() {
	src := `
model "openai" "local" {
  base_url        = "http://127.0.0.1:8000/v1"
  max_concurrency = 4
}
task "niah" "small" { lengths = range(1000, 3001, 1000) }
eval "needles" {
  task    = task.niah.small
  models  = [model.openai.local]
  scorers = ["contains"]
}
`
	cfg, err := config.Parse("hayloft.hcl", []byte(src), config.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range cfg.Components {
		fmt.Println(c.Ref(), string(c.Options))
	}
	e := cfg.Evals[0]
	fmt.Println(e.Name, e.Task.Ref(), e.Models[0].Model.MaxConcurrency, e.Retrievers[0] == nil, e.Scorers[0].Ref())
	// Output:
	// model.openai.local {"base_url":"http://127.0.0.1:8000/v1"}
	// task.niah.small {"lengths":[1000,2000,3000]}
	// needles task.niah.small 4 true scorer.contains.contains
}

func ExampleComponent_Diag() {
	src := "model \"openai\" \"local\" {\n  temprature = 0.2\n}\n"
	cfg, err := config.Parse("hayloft.hcl", []byte(src), config.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	m := cfg.Components[0]
	// What a plugin's factory returns for an option it does not know.
	var opts struct {
		Temperature float64 `json:"temperature"`
	}
	err = m.Options.Decode(&opts)
	fmt.Println(m.Diag(err))
	fmt.Println(m.Diag(sdk.ErrUnsupported))
	// Output:
	// hayloft.hcl:2:3: model "openai" "local": option "temprature": unknown option; did you mean "temperature"?
	// hayloft.hcl:1:1: model "openai" "local": unsupported
}
