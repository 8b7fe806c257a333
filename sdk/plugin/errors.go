package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hayloft/hayloft/sdk"
	pb "github.com/hayloft/hayloft/sdk/plugin/proto/hayloft/plugin/v1"
)

// ErrConnection reports that the connection to a plugin broke mid-call, which
// almost always means its process died. The host restarts the plugin on it;
// a component never returns it itself.
var ErrConnection = errors.New("plugin connection lost")

// errorToProto records err's kind. The message is err's full text, so context
// added by wrapping survives even though only the typed core is rebuilt.
func errorToProto(err error) *pb.Error {
	e := &pb.Error{Message: err.Error()}
	var ae *sdk.AttemptsError
	if errors.As(err, &ae) {
		e.Attempts = attemptsToProto(ae.Attempts)
	}
	var (
		ce *sdk.ConfigError
		re *sdk.RetryableError
		qe *sdk.RequestError
	)
	switch {
	case errors.As(err, &ce):
		e.Kind, e.Field, e.Inner = pb.Error_KIND_CONFIG, ce.Field, ce.Msg
	case errors.As(err, &re):
		e.Kind, e.RetryAfterNs = pb.Error_KIND_RETRYABLE, int64(re.After)
		if re.Err != nil {
			e.Inner = re.Err.Error()
		}
	case errors.As(err, &qe):
		e.Kind, e.Code, e.Inner = pb.Error_KIND_REQUEST, qe.Code, qe.Msg
	case errors.Is(err, sdk.ErrUnsupported):
		e.Kind = pb.Error_KIND_UNSUPPORTED
	case errors.Is(err, context.Canceled):
		e.Kind = pb.Error_KIND_CANCELED
	case errors.Is(err, context.DeadlineExceeded):
		e.Kind = pb.Error_KIND_DEADLINE
	}
	return e
}

// wrapped keeps the remote error's full text while unwrapping to the
// rebuilt typed error, so both the message and errors.As/Is survive.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

func withText(msg string, err error) error {
	if msg == err.Error() {
		return err
	}
	return &wrapped{msg: msg, err: err}
}

// errorFromProto rebuilds the Go error a component returned.
func errorFromProto(e *pb.Error) error {
	err := typedFromProto(e)
	if as := e.GetAttempts(); len(as) > 0 {
		// The remote text already counts the attempts.
		return withText(e.GetMessage(), &sdk.AttemptsError{Attempts: attemptsFromProto(as), Err: err})
	}
	return err
}

func typedFromProto(e *pb.Error) error {
	msg := e.GetMessage()
	switch e.GetKind() {
	case pb.Error_KIND_CONFIG:
		return withText(msg, &sdk.ConfigError{Field: e.GetField(), Msg: e.GetInner()})
	case pb.Error_KIND_RETRYABLE:
		return withText(msg, &sdk.RetryableError{Err: errors.New(e.GetInner()), After: time.Duration(e.GetRetryAfterNs())})
	case pb.Error_KIND_REQUEST:
		return withText(msg, &sdk.RequestError{Code: e.GetCode(), Msg: e.GetInner()})
	case pb.Error_KIND_UNSUPPORTED:
		return withText(msg, sdk.ErrUnsupported)
	case pb.Error_KIND_CANCELED:
		return withText(msg, context.Canceled)
	case pb.Error_KIND_DEADLINE:
		return withText(msg, context.DeadlineExceeded)
	}
	return errors.New(msg)
}

func codeFor(k pb.Error_Kind) codes.Code {
	switch k {
	case pb.Error_KIND_CONFIG:
		return codes.InvalidArgument
	case pb.Error_KIND_RETRYABLE:
		return codes.Unavailable
	case pb.Error_KIND_REQUEST:
		return codes.FailedPrecondition
	case pb.Error_KIND_UNSUPPORTED:
		return codes.Unimplemented
	case pb.Error_KIND_CANCELED:
		return codes.Canceled
	case pb.Error_KIND_DEADLINE:
		return codes.DeadlineExceeded
	case pb.Error_KIND_PANIC:
		return codes.Internal
	}
	return codes.Unknown
}

// toStatus turns a component error into a gRPC status error carrying a
// *pb.Error detail.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	return protoStatus(errorToProto(err))
}

func protoStatus(e *pb.Error) error {
	st, derr := status.New(codeFor(e.GetKind()), e.GetMessage()).WithDetails(e)
	if derr != nil {
		// Only fails for an unregistered message type, which pb.Error is not;
		// fall back to the code alone rather than losing the error.
		return status.Error(codeFor(e.GetKind()), e.GetMessage())
	}
	return st.Err()
}

// fromStatus turns an RPC error back into the component's error. Errors
// without a detail come from the transport: cancellation, a missing service
// (Unimplemented → sdk.ErrUnsupported) or a broken connection
// (ErrConnection).
func fromStatus(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	for _, d := range st.Details() {
		if e, ok := d.(*pb.Error); ok {
			return errorFromProto(e)
		}
	}
	switch st.Code() {
	case codes.Canceled:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The caller did not cancel: the connection was closed under the
		// call ("grpc: the client connection is closing"), as when the host
		// tears down a plugin that died.
		return fmt.Errorf("%w: %s", ErrConnection, st.Message())
	case codes.DeadlineExceeded:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s: %w", st.Message(), context.DeadlineExceeded)
	case codes.Unimplemented:
		return fmt.Errorf("%s: %w", st.Message(), sdk.ErrUnsupported)
	case codes.Unavailable:
		return fmt.Errorf("%w: %s", ErrConnection, st.Message())
	}
	return fmt.Errorf("plugin rpc: %s: %s", st.Code(), st.Message())
}
