package scoreio_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/hayloft/hayloft/kernel/scoreio"
	"github.com/hayloft/hayloft/plugins/scorers/exact"
)

// `hayloft score exact --option lowercase=true` over two lines.
func ExampleRun() {
	opts, err := scoreio.ParseOptions([]string{"lowercase=true"})
	if err != nil {
		fmt.Println(err)
		return
	}
	sc, err := exact.New(context.Background(), opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	in := strings.NewReader(`{"id": "q1", "prediction": "PARIS", "references": ["Paris", "paris, France"]}
{"id": "q2", "prediction": "Lyon", "references": "Paris"}
`)
	if err := scoreio.Run(context.Background(), sc, in, os.Stdout, false); err != nil {
		fmt.Println(err)
	}
	if err := scoreio.Run(context.Background(), sc, strings.NewReader(`{"prediction": "x", "references": 3}`), os.Stdout, false); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"id":"q1","prediction":"PARIS","references":["Paris","paris, France"],"score":{"invalid":false,"match":true,"target":0,"value":1}}
	// {"id":"q2","prediction":"Lyon","references":"Paris","score":{"invalid":false,"match":false,"value":0}}
	// line 1: references: want string, list or object
}
