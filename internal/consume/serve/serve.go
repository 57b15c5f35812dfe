// Package serve runs fieldwork's reference consumer as `fieldwork consume` does: one of the
// bundled handlers (package handlers) on the engine (package consume), the store readied
// first, Prometheus metrics served when asked, and a second interruption abandoning the
// batches in flight (docs/design.md §3.5).
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fieldwork/fieldwork/internal/consume"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// Options are a run of the reference consumer.
type Options struct {
	// Options are the engine's; Run sets their Handler, Store and Registerer, and their
	// Logger when it is nil.
	consume.Options
	// HandlerName is the bundled handler to run (handlers.Names).
	HandlerName string
	// Schema is the store's schema, where the handler keeps its tables.
	Schema string
	// WebhookURL and WebhookTimeout configure the webhook handler.
	WebhookURL     string
	WebhookTimeout time.Duration
	// Migrate applies the store's and the handler's migrations first (consume.Prepare);
	// without it a store that is not at this binary's version is refused.
	Migrate bool
	// MetricsAddr, when set, is where Prometheus metrics are served (/metrics).
	MetricsAddr string
	// Interrupts, when set, delivers the process's interruptions. The first one is the
	// caller's to act on (it cancels ctx: the run drains); a second one abandons the batches
	// in flight (consume.Engine.Abort).
	Interrupts <-chan os.Signal
}

// Run readies st for the handler, runs the engine until ctx is done, --stop-when-idle, or a
// failure, and returns what it did. An abandoned run is an interruption (exit 130); a
// handler or option the engine refuses is a usage error.
func Run(ctx context.Context, st *dedup.Store, o Options) (consume.Stats, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	h, err := handlers.New(o.HandlerName, handlers.Config{
		Consumer: o.Consumer, Driver: st.Driver(), Schema: o.Schema, Logger: log, Registerer: reg,
		WebhookURL: o.WebhookURL, WebhookTimeout: o.WebhookTimeout,
	})
	if err != nil {
		return consume.Stats{}, fwerr.Wrap(fwerr.KindUsage, err)
	}
	steps, err := consume.Prepare(ctx, st, h, o.Migrate)
	if err != nil {
		return consume.Stats{}, err
	}
	for _, s := range steps {
		log.Info("migrated the dedup store", "version", s.Version, "name", s.Name, "table", st.Table())
	}
	if o.MetricsAddr != "" {
		ln, err := net.Listen("tcp", o.MetricsAddr)
		if err != nil {
			return consume.Stats{}, fmt.Errorf("serve metrics on %s: %w (choose another --metrics-addr, or \"\" to turn metrics off)", o.MetricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		log.Info("serving metrics", "addr", "http://"+ln.Addr().String()+"/metrics")
	}

	eo := o.Options
	eo.Handler, eo.Store, eo.Registerer, eo.Logger = h, st, reg, log
	eng, err := consume.New(eo)
	if err != nil {
		return consume.Stats{}, fwerr.Wrap(fwerr.KindUsage, err)
	}
	if o.Interrupts != nil {
		go abortOnSecond(o.Interrupts, eng, log)
	}
	err = eng.Run(ctx)
	if errors.Is(err, consume.ErrAborted) {
		return eng.Stats(), fwerr.Wrap(fwerr.KindInterrupted, err)
	}
	return eng.Stats(), err
}

// abortOnSecond abandons eng's batches in flight at the second interruption, until eng ends.
func abortOnSecond(interrupts <-chan os.Signal, eng *consume.Engine, log *slog.Logger) {
	n := 0
	for {
		select {
		case <-interrupts:
			if n++; n >= 2 {
				log.Warn("second signal: abandoning batches in flight")
				eng.Abort()
				return
			}
		case <-eng.Done():
			return
		}
	}
}
