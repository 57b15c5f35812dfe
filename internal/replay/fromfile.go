package replay

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// FileSelection is what a file of records names (`replay --from-file F`): addresses of
// records, event ids, and the topic the addresses are in ("" when it names only event ids).
// Truncated is set when the file is a listing that was cut at its limit (the `_truncated`
// mark of `dlq list`): it names fewer dead letters than matched when it was written.
type FileSelection struct {
	Topic     string
	Addresses []string
	EventIDs  []string
	Truncated bool
}

// maxSelectionLine is the longest line ReadFileSelection reads: a dlq list line holds the
// record's value.
const maxSelectionLine = 64 << 20

// ReadFileSelection reads a file of records, one a line: a record address
// (topic/partition/offset, kafka.ParseRecordAddress, the one reader of addresses), an event
// id, or a JSON object as `dlq list -o jsonl` writes it (its topic, partition and offset are
// the dead letter's address). Blank lines and lines starting with # are skipped. A line that
// looks like an address but does not read as one is a usage error naming the line, so that a
// typo never turns into an event id; so is a file whose addresses name two topics.
func ReadFileSelection(r io.Reader, name string) (FileSelection, error) {
	var fs FileSelection
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxSelectionLine)
	n := 0
	add := func(a kafka.RecordAddress) error {
		if fs.Topic != "" && a.Topic != fs.Topic {
			return fwerr.Usagef("%s:%d: %s is in %s, the lines before in %s: a replay reads one topic (split the file by topic)", name, n, a, a.Topic, fs.Topic)
		}
		fs.Topic = a.Topic
		if s := a.String(); !seen[s] {
			seen[s] = true
			fs.Addresses = append(fs.Addresses, s)
		}
		return nil
	}
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "{"):
			var obj struct {
				Topic     *string          `json:"topic"`
				Partition *int32           `json:"partition"`
				Offset    *int64           `json:"offset"`
				Truncated *json.RawMessage `json:"_truncated"`
			}
			if err := json.Unmarshal([]byte(line), &obj); err != nil {
				return fs, fwerr.Usagef("%s:%d: not a JSON object of dlq list -o jsonl: %v", name, n, err)
			}
			if obj.Truncated != nil {
				fs.Truncated = true
				continue
			}
			if obj.Topic == nil || obj.Partition == nil || obj.Offset == nil {
				return fs, fwerr.Usagef("%s:%d: a JSON line needs the dead letter's topic, partition and offset (as dlq list -o jsonl writes them)", name, n)
			}
			a, err := kafka.ParseRecordAddress(fmt.Sprintf("%s/%d/%d", *obj.Topic, *obj.Partition, *obj.Offset))
			if err != nil {
				return fs, fwerr.Usagef("%s:%d: %v", name, n, err)
			}
			if err := add(a); err != nil {
				return fs, err
			}
		case strings.Contains(line, "/"):
			a, err := kafka.ParseRecordAddress(line)
			if err != nil {
				return fs, fwerr.Usagef("%s:%d: %v", name, n, err)
			}
			if err := add(a); err != nil {
				return fs, err
			}
		default:
			if !seen["id:"+line] {
				seen["id:"+line] = true
				fs.EventIDs = append(fs.EventIDs, line)
			}
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return fs, fwerr.Usagef("%s:%d: longer than %d MiB: not a record address, event id or dlq list -o jsonl line", name, n+1, maxSelectionLine>>20)
	} else if err != nil {
		return fs, fmt.Errorf("read %s: %w", name, err)
	}
	if len(fs.Addresses) == 0 && len(fs.EventIDs) == 0 {
		return fs, fwerr.Usagef("%s names no record: want addresses (topic/partition/offset), event ids or dlq list -o jsonl lines, one a line", name)
	}
	return fs, nil
}
