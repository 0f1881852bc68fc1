package qmp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeQEMU speaks QMP as QEMU does on one connection: a greeting, answers in
// order, and the events the test sends between them.
type fakeQEMU struct {
	t        *testing.T
	conn     net.Conn
	commands chan map[string]any
}

func startFake(t *testing.T) (*fakeQEMU, string) {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "qmp.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeQEMU{t: t, commands: make(chan map[string]any, 10)}
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		conn, err := l.Accept()
		if err != nil {
			return
		}
		f.conn = conn
		f.send(`{"QMP": {"version": {"qemu": {"micro": 0, "minor": 2, "major": 7}}, "capabilities": ["oob"]}}`)
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			var cmd map[string]any
			_ = json.Unmarshal(sc.Bytes(), &cmd)
			f.commands <- cmd
		}
		close(f.commands)
	}()
	t.Cleanup(func() { l.Close(); <-accepted; _ = f.conn.Close() })
	return f, socket
}

func (f *fakeQEMU) send(line string) {
	if _, err := f.conn.Write([]byte(line + "\n")); err != nil {
		f.t.Error(err)
	}
}

// answer takes the next command, checks its name and answers it with line,
// with the command's id as QEMU does. It runs beside the test: a wrong
// command is an error, and nothing is answered.
func (f *fakeQEMU) answer(command, line string) map[string]any {
	select {
	case cmd := <-f.commands:
		if cmd["execute"] != command {
			f.t.Errorf("command %v, want %s", cmd["execute"], command)
			return nil
		}
		if id, ok := cmd["id"].(string); ok {
			line = strings.TrimSuffix(strings.TrimSpace(line), "}") + fmt.Sprintf(`, "id": %q}`, id)
		}
		f.send(line)
		return cmd
	case <-time.After(5 * time.Second):
		f.t.Errorf("no command %s", command)
	}
	return nil
}

func dialFake(t *testing.T) (*Client, *fakeQEMU) {
	f, socket := startFake(t)
	done := make(chan struct{})
	go func() { defer close(done); f.answer("qmp_capabilities", `{"return": {}}`) }()
	c, err := Dial(context.Background(), socket)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, f
}

func TestCommandsGetTheirAnswersWithEventsBetween(t *testing.T) {
	c, f := dialFake(t)
	go func() {
		f.send(`{"event": "STOP", "timestamp": {"seconds": 1700000000, "microseconds": 250000}}`)
		cmd := f.answer("migrate-set-parameters", `{"return": {}}`)
		if args, _ := cmd["arguments"].(map[string]any); args["downtime-limit"] != 50.0 {
			t.Errorf("arguments %v", cmd["arguments"])
		}
		f.send(`{"event": "RESUME", "timestamp": {"seconds": 1700000001, "microseconds": 5}}`)
		f.answer("query-migrate", `{"return": {"status": "completed", "downtime": 9, "total-time": 590}}`)
	}()
	ctx := context.Background()
	if err := c.Execute(ctx, "migrate-set-parameters", map[string]any{"downtime-limit": 50}, nil); err != nil {
		t.Fatal(err)
	}
	var st struct {
		Status    string `json:"status"`
		Downtime  int    `json:"downtime"`
		TotalTime int    `json:"total-time"`
	}
	if err := c.Execute(ctx, "query-migrate", nil, &st); err != nil {
		t.Fatal(err)
	}
	if st.Status != "completed" || st.Downtime != 9 || st.TotalTime != 590 {
		t.Errorf("query-migrate: %+v", st)
	}
	stop, i, err := c.WaitEvent(ctx, "STOP", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The stamps are put on the monotonic clock: off QEMU's by no more than
	// the time between two readings of the clocks.
	near := func(got, want time.Time) bool { return got.Round(0).Sub(want).Abs() < time.Millisecond }
	if want := time.Unix(1700000000, 250000000); !near(stop.Time, want) {
		t.Errorf("STOP at %v, want QEMU's stamp %v", stop.Time, want)
	}
	resume, j, err := c.WaitEvent(ctx, "RESUME", i)
	if err != nil || j <= i || !near(resume.Time, time.Unix(1700000001, 5000)) {
		t.Errorf("RESUME %v at %d (STOP at %d): %v", resume.Time, j, i, err)
	}
	if d := resume.Time.Sub(stop.Time); (d - 750005*time.Microsecond).Abs() > time.Millisecond {
		t.Errorf("STOP to RESUME %v, want QEMU's 750.005 ms", d)
	}
}

func TestARefusedCommandIsAnErrorNamingIt(t *testing.T) {
	c, f := dialFake(t)
	go f.answer("migrate", `{"error": {"class": "GenericError", "desc": "Failed to connect"}}`)
	err := c.Execute(context.Background(), "migrate", map[string]string{"uri": "tcp:10.0.0.2:4444"}, nil)
	var qe *Error
	if !errors.As(err, &qe) || qe.Desc != "Failed to connect" || !strings.Contains(err.Error(), "qmp migrate") {
		t.Fatalf("error %v, want QEMU's, naming the command", err)
	}
}

func TestWaitingForAnEventEndsWithTheConnection(t *testing.T) {
	c, f := dialFake(t)
	wait := make(chan error, 1)
	go func() { _, _, err := c.WaitEvent(context.Background(), "RESUME", c.EventCount()); wait <- err }()
	f.send(`{"event": "STOP", "timestamp": {"seconds": 1, "microseconds": 0}}`)
	f.conn.Close() // QEMU exits
	select {
	case err := <-wait:
		if err == nil || !strings.Contains(err.Error(), "waiting for RESUME") {
			t.Errorf("error %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting after QEMU went")
	}
}

// An answer that comes after its command gave up is not taken as the next
// command's.
func TestALateAnswerIsNotTheNextCommands(t *testing.T) {
	c, f := dialFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := c.Execute(ctx, "query-status", nil, nil); err == nil {
		t.Fatal("answered with nobody answering")
	}
	late := <-f.commands
	f.send(fmt.Sprintf(`{"return": {"status": "paused"}, "id": %q}`, late["id"]))
	go f.answer("query-status", `{"return": {"status": "running"}}`)
	var st struct {
		Status string `json:"status"`
	}
	if err := c.Execute(context.Background(), "query-status", nil, &st); err != nil || st.Status != "running" {
		t.Errorf("status %q (%v), want its own answer, running", st.Status, err)
	}
}
