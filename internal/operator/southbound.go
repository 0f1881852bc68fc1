package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
)

// defaultGenevePort is the port a Geneve Encap record without options:dst_port uses.
const defaultGenevePort = 6081

// encapRecord is one Geneve Encap record: its UUID and options:dst_port (0 when unset).
type encapRecord struct {
	UUID    string
	DstPort int
}

// encapsToFix are the records whose port is not the wanted one, in UUID order.
func encapsToFix(records []encapRecord, port int) []string {
	var fix []string
	for _, r := range records {
		have := r.DstPort
		if have == 0 {
			have = defaultGenevePort
		}
		if have != port {
			fix = append(fix, r.UUID)
		}
	}
	sort.Strings(fix)
	return fix
}

// geneveEncaps lists the southbound database's Geneve Encap records.
func geneveEncaps(ctx context.Context, sb string) ([]encapRecord, error) {
	out, err := exec.CommandContext(ctx, "ovn-sbctl", "--db="+sb, "--timeout=10", "--format=json", "--columns=_uuid,options",
		"find", "encap", "type=geneve").Output()
	if err != nil {
		return nil, fmt.Errorf("list Encap records in %s: %w", sb, execError(err))
	}
	return parseEncaps(out)
}

// parseEncaps reads ovn-sbctl's JSON table of _uuid and options.
func parseEncaps(out []byte) ([]encapRecord, error) {
	var table struct {
		Data [][2][]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(out, &table); err != nil {
		return nil, fmt.Errorf("read ovn-sbctl's Encap table: %w", err)
	}
	var records []encapRecord
	for _, row := range table.Data {
		var r encapRecord
		if len(row[0]) != 2 || json.Unmarshal(row[0][1], &r.UUID) != nil {
			return nil, fmt.Errorf("read ovn-sbctl's Encap table: bad _uuid %s", row[0])
		}
		var pairs [][2]string
		if len(row[1]) == 2 {
			if err := json.Unmarshal(row[1][1], &pairs); err != nil {
				return nil, fmt.Errorf("read ovn-sbctl's Encap table: options of %s: %w", r.UUID, err)
			}
		}
		for _, kv := range pairs {
			if kv[0] == "dst_port" {
				p, err := strconv.Atoi(kv[1])
				if err != nil {
					return nil, fmt.Errorf("southbound Encap %s: options:dst_port %q: %w", r.UUID, kv[1], err)
				}
				r.DstPort = p
			}
		}
		records = append(records, r)
	}
	return records, nil
}

// setEncapPort sets options:dst_port of the given Encap records (every
// Geneve record when uuids is nil) in ONE transaction: the whole cluster
// moves to the new port at once.
func setEncapPort(ctx context.Context, sb string, port int32, uuids []string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if uuids == nil {
		records, err := geneveEncaps(ctx, sb)
		if err != nil {
			return err
		}
		for _, r := range records {
			uuids = append(uuids, r.UUID)
		}
		if len(uuids) == 0 {
			return fmt.Errorf("no Geneve Encap record in %s", sb)
		}
	}
	args := []string{"--db=" + sb, "--timeout=10"}
	for i, uuid := range uuids {
		if i > 0 {
			args = append(args, "--")
		}
		args = append(args, "set", "encap", uuid, fmt.Sprintf("options:dst_port=%d", port))
	}
	if _, err := exec.CommandContext(ctx, "ovn-sbctl", args...).Output(); err != nil {
		return fmt.Errorf("set Encap dst_port %d in %s: %w", port, sb, execError(err))
	}
	return nil
}

// keepEncapPort sets the applied port on the Geneve Encap records that lack
// it, and returns how many it fixed: a chassis that registers again (a new
// node, ovn-controller recreating its Chassis row) comes without it.
func keepEncapPort(ctx context.Context, sb string, port int32) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	records, err := geneveEncaps(ctx, sb)
	if err != nil {
		return 0, err
	}
	fix := encapsToFix(records, int(port))
	if len(fix) == 0 {
		return 0, nil
	}
	return len(fix), setEncapPort(ctx, sb, port, fix)
}

// execError adds a failed command's standard error to its error.
func execError(err error) error {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}
