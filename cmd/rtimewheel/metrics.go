package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// Names of the service's metrics (README.md lists them).
const (
	metricTasksAdded       = "rtimewheel_tasks_added_total"
	metricTasksRemoved     = "rtimewheel_tasks_removed_total"
	metricCallbacks        = "rtimewheel_callbacks_total"
	metricRetries          = "rtimewheel_callback_retries_total"
	metricDeadLetters      = "rtimewheel_dead_letters_total"
	metricCallbackDuration = "rtimewheel_callback_duration_seconds"
	metricLateness         = "rtimewheel_callback_lateness_seconds"
	metricInFlight         = "rtimewheel_callbacks_in_flight"
	metricPullDuration     = "rtimewheel_pull_duration_seconds"
	metricPulledTasks      = "rtimewheel_pulled_tasks_total"
	metricPullErrors       = "rtimewheel_pull_errors_total"
)

// serviceMetrics are the Prometheus metrics of one serve process, on a
// registry of its own (nothing registers on the global default registry).
type serviceMetrics struct {
	registry         *prometheus.Registry
	handler          http.Handler // serves the registry in the text format
	tasksAdded       prometheus.Counter
	tasksRemoved     prometheus.Counter
	callbacks        *prometheus.CounterVec // by outcome
	retries          prometheus.Counter
	deadLetters      prometheus.Counter
	callbackDuration prometheus.Histogram
	lateness         prometheus.Histogram
	pullDuration     prometheus.Histogram
	pulledTasks      prometheus.Counter
	pullErrors       prometheus.Counter
}

// newServiceMetrics registers the service's metrics and the Go and process
// collectors on a new registry.
func newServiceMetrics() *serviceMetrics {
	reg := prometheus.NewRegistry()
	// Lateness buckets are fine-grained at the low end, where a healthy
	// worker fires (milliseconds), and reach 10 s for overdue tasks.
	latenessBuckets := []float64{0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	m := &serviceMetrics{
		registry: reg,
		handler:  promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}),
		tasksAdded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricTasksAdded, Help: "Tasks stored through this process's HTTP API (a replacement counts too).",
		}),
		tasksRemoved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricTasksRemoved, Help: "Tasks cancelled through this process's HTTP API.",
		}),
		callbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricCallbacks, Help: "Callback attempts made by this worker, by outcome (delivered, retry, dead, dropped).",
		}, []string{"outcome"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricRetries, Help: "Failed callback attempts scheduled again.",
		}),
		deadLetters: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricDeadLetters, Help: "Tasks that failed their last attempt and became dead letters.",
		}),
		callbackDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: metricCallbackDuration, Help: "Duration of callback attempts.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: metricLateness, Help: "How long after its due time a callback attempt started.",
			Buckets: latenessBuckets,
		}),
		pullDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: metricPullDuration, Help: "Duration of the worker's pulls of due tasks from Redis.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
		}),
		pulledTasks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricPulledTasks, Help: "Tasks taken by the worker's pulls, including expired leases taken over.",
		}),
		pullErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricPullErrors, Help: "Pulls from Redis that failed.",
		}),
	}
	for _, outcome := range []rtimewheel.Outcome{
		rtimewheel.OutcomeDelivered, rtimewheel.OutcomeRetry, rtimewheel.OutcomeDead, rtimewheel.OutcomeDropped,
	} {
		m.callbacks.WithLabelValues(string(outcome)) // exported at 0 from the start
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.tasksAdded, m.tasksRemoved, m.callbacks, m.retries, m.deadLetters,
		m.callbackDuration, m.lateness, m.pullDuration, m.pulledTasks, m.pullErrors,
	)
	return m
}

// trackInFlight exports inFlight (the wheel's InFlight) as a gauge.
func (m *serviceMetrics) trackInFlight(inFlight func() int) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: metricInFlight, Help: "Callbacks in flight in this worker now.",
	}, func() float64 { return float64(inFlight()) }))
}

// observeCallback is the wheel's callback hook.
func (m *serviceMetrics) observeCallback(e rtimewheel.CallbackEvent) {
	m.callbacks.WithLabelValues(string(e.Outcome)).Inc()
	switch e.Outcome {
	case rtimewheel.OutcomeRetry:
		m.retries.Inc()
	case rtimewheel.OutcomeDead:
		m.deadLetters.Inc()
	}
	m.callbackDuration.Observe(e.Duration.Seconds())
	m.lateness.Observe(max(e.Lateness().Seconds(), 0))
}

// observePull is the wheel's pull hook.
func (m *serviceMetrics) observePull(e rtimewheel.PullEvent) {
	m.pullDuration.Observe(e.Duration.Seconds())
	m.pulledTasks.Add(float64(e.Tasks))
	if e.Err != nil {
		m.pullErrors.Inc()
	}
}
