package ovs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/ovn-org/libovsdb/ovsdb"
	"golang.org/x/sys/unix"
)

// An armed line is one prepared transaction's own connection to the
// database, opened before its time, with no monitor on it. At its time the
// caller's thread writes the request and reads the reply with blocking
// system calls, so the kernel wakes that very thread when the reply comes.
//
// Why: a live change's step thread is raised to run at its time, but the
// reply to a transaction sent through the switch's libovsdb connection is
// read by that connection's reader goroutine, behind the monitor update the
// server sends first, on whichever runtime thread gets a core. On a node
// whose ovs-vswitchd reconfigures at that moment (the lab's, 3 nodes on 2
// cores) the step saw its commit 1.5 to 6 ms after ovsdb-server's jsonrpc log
// says it sent the reply.
type armedLine struct {
	fd int
	// ops is the whole transaction encoded in request, whose results the
	// reply carries in the same order.
	ops     []ovsdb.Operation
	request []byte
	what    string
}

// armedRequestID is the JSON-RPC id of an armed line's one request.
const armedRequestID = "netshift-armed"

// dialArmed opens an armed line to a unix:PATH endpoint and encodes the
// transaction; a line on any other endpoint is refused (the caller sends
// through its connection instead).
func dialArmed(what, endpoint, db string, ops []ovsdb.Operation) (*armedLine, error) {
	path, ok := strings.CutPrefix(endpoint, "unix:")
	if !ok {
		return nil, fmt.Errorf("%s: an armed transaction needs a unix socket, not %q", what, endpoint)
	}
	params := make([]any, 0, len(ops)+1)
	params = append(params, db)
	for _, op := range ops {
		params = append(params, op)
	}
	request, err := json.Marshal(map[string]any{"method": "transact", "params": params, "id": armedRequestID})
	if err != nil {
		return nil, fmt.Errorf("%s: encode: %w", what, err)
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: socket: %w", what, err)
	}
	// A server that stops answering fails the exchange after txTimeout
	// instead of holding the thread.
	tv := syscall.NsecToTimeval(txTimeout.Nanoseconds())
	for _, opt := range []int{syscall.SO_RCVTIMEO, syscall.SO_SNDTIMEO} {
		if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, opt, &tv); err != nil {
			_ = syscall.Close(fd)
			return nil, fmt.Errorf("%s: socket timeout: %w", what, err)
		}
	}
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("%s: connect %s: %w", what, path, err)
	}
	return &armedLine{fd: fd, ops: ops, request: request, what: what}, nil
}

// exchange sends the request and reads its reply, on the calling thread;
// any other message the server sends first (an echo, a notification) is
// skipped. It returns the operations' results and when the reply came.
func (l *armedLine) exchange() ([]ovsdb.OperationResult, time.Time, error) {
	for rest := l.request; len(rest) > 0; {
		// MSG_NOSIGNAL: a server gone since Arm is an error to return, not a SIGPIPE.
		n, err := unix.SendmsgN(l.fd, rest, nil, nil, unix.MSG_NOSIGNAL)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return nil, time.Time{}, fmt.Errorf("%s: send: %w", l.what, err)
		}
		rest = rest[n:]
	}
	dec := json.NewDecoder(fdReader(l.fd))
	for {
		var msg struct {
			ID     any                     `json:"id"`
			Method string                  `json:"method"`
			Result []ovsdb.OperationResult `json:"result"`
			Error  any                     `json:"error"`
		}
		if err := dec.Decode(&msg); err != nil {
			return nil, time.Time{}, fmt.Errorf("%s: read the reply: %w", l.what, err)
		}
		if msg.Method != "" || msg.ID != armedRequestID {
			continue
		}
		at := time.Now()
		if msg.Error != nil {
			return nil, at, fmt.Errorf("%s: %v", l.what, msg.Error)
		}
		return msg.Result, at, nil
	}
}

// close ends the line.
func (l *armedLine) close() {
	if l != nil && l.fd >= 0 {
		_ = syscall.Close(l.fd)
		l.fd = -1
	}
}

// fdReader reads a blocking socket with read(2) on the calling thread
// (the runtime's poller would hand the wakeup to another thread).
type fdReader int

func (r fdReader) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(int(r), p)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			return 0, fmt.Errorf("no reply within %s", txTimeout)
		case err != nil:
			return 0, err
		case n == 0:
			return 0, errors.New("the server closed the connection")
		}
		return n, nil
	}
}
