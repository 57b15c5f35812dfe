package output

import "io"

// asyncWriter buffers what is written to w, as a bufio.Writer does, and writes each full
// buffer from a goroutine while the next one fills: a stream of a million rows spends a large
// share of its time in write(2) (copying into a pipe), which then runs beside the encoding,
// on another core, instead of after it. At most one buffer is being written at a time, in
// order. A write error is returned by the Write or Flush after the one that handed its buffer
// over, and by every call after it.
type asyncWriter struct {
	w     io.Writer
	size  int
	buf   []byte // filling
	spare []byte // the buffer being written, or free once done
	busy  bool   // spare is being written; its result comes on done
	done  chan error
	err   error
}

func newAsyncWriter(w io.Writer, size int) *asyncWriter {
	return &asyncWriter{w: w, size: size, buf: make([]byte, 0, size), done: make(chan error, 1)}
}

// Write buffers p, handing the buffer over when it is full.
func (a *asyncWriter) Write(p []byte) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	a.buf = append(a.buf, p...)
	if len(a.buf) >= a.size {
		if err := a.handOver(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// wait waits for the buffer being written, if any.
func (a *asyncWriter) wait() error {
	if a.busy {
		a.busy = false
		if err := <-a.done; err != nil && a.err == nil {
			a.err = err
		}
	}
	return a.err
}

// handOver waits for the previous buffer, then has the filled one written while the other
// fills.
func (a *asyncWriter) handOver() error {
	if err := a.wait(); err != nil {
		return err
	}
	b := a.buf
	a.buf, a.spare, a.busy = a.spare[:0], b, true
	if a.buf == nil {
		a.buf = make([]byte, 0, a.size)
	}
	go func() {
		_, err := a.w.Write(b)
		a.done <- err
	}()
	return nil
}

// Flush writes everything buffered and returns when it is written.
func (a *asyncWriter) Flush() error {
	if a.err != nil {
		return a.err
	}
	if len(a.buf) > 0 {
		if err := a.handOver(); err != nil {
			return err
		}
	}
	return a.wait()
}

// Buffered is how many bytes are buffered and not yet handed over.
func (a *asyncWriter) Buffered() int { return len(a.buf) }
