// Package qmp is a client of QEMU's machine protocol (QMP): a JSON line
// protocol on a unix socket that carries commands and their answers and,
// between them, events (STOP, RESUME, MIGRATION, ...) stamped with QEMU's own
// clock.
package qmp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Event is an asynchronous message of QEMU's, with the time QEMU stamped it
// (on the monotonic clock).
type Event struct {
	Name string          `json:"event"`
	Data json.RawMessage `json:"data,omitempty"`
	Time time.Time       `json:"-"`
}

// Error is a command QEMU refused.
type Error struct {
	Command string
	Class   string `json:"class"`
	Desc    string `json:"desc"`
}

func (e *Error) Error() string { return fmt.Sprintf("qmp %s: %s: %s", e.Command, e.Class, e.Desc) }

// Client runs one command at a time and keeps every event it reads. Each
// command carries an id, and only the answer with the id of the command in
// flight is taken: an answer that comes after its command gave up is dropped.
type Client struct {
	conn net.Conn
	cmd  sync.Mutex   // one command in flight
	seq  int          // the last command's id (under cmd)
	want atomic.Value // the id whose answer Execute waits for (string)

	mu      sync.Mutex
	events  []Event
	changed chan struct{} // closed and replaced at every event
	answer  chan message
	readErr error
	done    chan struct{}
}

// message is anything QEMU sends.
type message struct {
	Greeting  json.RawMessage `json:"QMP,omitempty"`
	Return    json.RawMessage `json:"return,omitempty"`
	Error     *Error          `json:"error,omitempty"`
	Event     string          `json:"event,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	ID        string          `json:"id,omitempty"`
	Timestamp *struct {
		Seconds      int64 `json:"seconds"`
		Microseconds int64 `json:"microseconds"`
	} `json:"timestamp,omitempty"`
}

// Dial connects to a QMP socket, reads QEMU's greeting and leaves its
// negotiation mode, after which commands are accepted.
func Dial(ctx context.Context, socket string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, fmt.Errorf("qmp %s: %w", socket, err)
	}
	c := &Client{conn: conn, changed: make(chan struct{}), answer: make(chan message, 1), done: make(chan struct{})}
	greeted := make(chan error, 1)
	go c.read(greeted)
	select {
	case err = <-greeted:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		err = c.Execute(ctx, "qmp_capabilities", nil, nil)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("qmp %s: %w", socket, err)
	}
	return c, nil
}

// read decodes every message until the connection ends: the greeting first,
// then answers to the command in flight and events.
func (c *Client) read(greeted chan<- error) {
	defer close(c.done)
	dec := json.NewDecoder(c.conn)
	var first message
	if err := dec.Decode(&first); err != nil || first.Greeting == nil {
		greeted <- fmt.Errorf("no QMP greeting: %v", err)
		return
	}
	greeted <- nil
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			c.mu.Lock()
			c.readErr = err
			close(c.changed)
			c.mu.Unlock()
			return
		}
		if m.Event == "" {
			if want, _ := c.want.Load().(string); m.ID == want {
				select {
				case c.answer <- m:
				default: // never block the events behind an answer nobody takes
				}
			}
			continue
		}
		e := Event{Name: m.Event, Data: m.Data}
		if m.Timestamp != nil {
			// QEMU stamps by the wall clock; the stamp is put on this process's
			// monotonic clock (now, less the wall time since the stamp), so that
			// it compares with times measured here without the two clocks' drift.
			e.Time = time.Now().Add(-time.Since(time.Unix(m.Timestamp.Seconds, m.Timestamp.Microseconds*1000)))
		}
		c.mu.Lock()
		c.events = append(c.events, e)
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
	}
}

// Execute runs command with args (nil: none) and decodes its answer into
// result (nil: ignored).
func (c *Client) Execute(ctx context.Context, command string, args, result any) error {
	c.cmd.Lock()
	defer c.cmd.Unlock()
	c.seq++
	id := fmt.Sprintf("netshift-%d", c.seq)
	c.want.Store(id)
	select {
	case <-c.answer: // an answer left by a command that gave up
	default:
	}
	req := map[string]any{"execute": command, "id": id}
	if args != nil {
		req["arguments"] = args
	}
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := c.conn.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("qmp %s: %w", command, err)
	}
	select {
	case m := <-c.answer:
		return decodeAnswer(command, m, result)
	case <-c.done:
		select {
		case m := <-c.answer: // answered just before QEMU went (quit does)
			return decodeAnswer(command, m, result)
		default:
		}
		return fmt.Errorf("qmp %s: QEMU closed the connection", command)
	case <-ctx.Done():
		return fmt.Errorf("qmp %s: %w", command, ctx.Err())
	}
}

func decodeAnswer(command string, m message, result any) error {
	if m.Error != nil {
		m.Error.Command = command
		return m.Error
	}
	if result != nil {
		if err := json.Unmarshal(m.Return, result); err != nil {
			return fmt.Errorf("qmp %s: its answer: %w", command, err)
		}
	}
	return nil
}

// WaitEvent waits for the first event named name received at or after index
// from (0: every event since Dial), and returns it and its index.
func (c *Client) WaitEvent(ctx context.Context, name string, from int) (Event, int, error) {
	for {
		c.mu.Lock()
		for i := from; i < len(c.events); i++ {
			if c.events[i].Name == name {
				e := c.events[i]
				c.mu.Unlock()
				return e, i, nil
			}
		}
		changed, err := c.changed, c.readErr
		c.mu.Unlock()
		if err != nil {
			return Event{}, 0, fmt.Errorf("qmp: waiting for %s: the connection ended: %w", name, err)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Event{}, 0, fmt.Errorf("qmp: waiting for %s: %w", name, ctx.Err())
		}
	}
}

// EventCount is how many events were received: a WaitEvent from here waits
// for what comes next.
func (c *Client) EventCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events)
}

// Close ends the connection.
func (c *Client) Close() error {
	err := c.conn.Close()
	<-c.done
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
