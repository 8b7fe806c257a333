// Command fakeserver stands in for vLLM in the bridge's tests: it serves
// openaitest on -port and can misbehave on request.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
)

func main() {
	port := flag.Int("port", 0, "port to serve on")
	delay := flag.Duration("startup-delay", 0, "time spent \"loading weights\" before listening")
	neverReady := flag.Bool("never-ready", false, "load forever")
	exitCode := flag.Int("exit-code", 0, "fail at startup with this code")
	dieAfter := flag.Int("die-after", 0, "crash while serving chat request number N+1")
	ignoreTerm := flag.Bool("ignore-term", false, "ignore SIGTERM")
	flag.Parse()

	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	fmt.Printf("pid %d\n", os.Getpid())
	fmt.Printf("CUDA_VISIBLE_DEVICES=%s BRIDGE_TEST=%s\n", os.Getenv("CUDA_VISIBLE_DEVICES"), os.Getenv("BRIDGE_TEST"))
	if *exitCode != 0 {
		fmt.Fprintln(os.Stderr, "RuntimeError: CUDA out of memory")
		os.Exit(*exitCode)
	}
	fmt.Fprintln(os.Stderr, "INFO loading weights")
	if *neverReady {
		for {
			time.Sleep(100 * time.Millisecond)
		}
	}
	time.Sleep(*delay)
	opts := openaitest.Options{Addr: fmt.Sprintf("127.0.0.1:%d", *port), Model: "stand-in", Tokenize: openaitest.TokenizeVLLM}
	if *dieAfter > 0 {
		opts.FaultFunc = func(n int, prompt string) openaitest.Fault {
			if n >= *dieAfter {
				fmt.Fprintln(os.Stderr, "ERROR engine core died unexpectedly")
				os.Exit(3)
			}
			return openaitest.FaultNone
		}
	}
	srv, err := openaitest.Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ERROR", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "INFO serving on", srv.URL)
	select {}
}
