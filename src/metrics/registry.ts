/**
 * A small Prometheus registry: counters, gauges and histograms with labels, rendered in the text
 * exposition format (version 0.0.4). Any module handed the registry can add its own metrics
 * (`metrics.counter('baton_webhook_deliveries_total', …).inc({ result: 'ok' })`); gauges that
 * mirror database state are filled by collectors, which run on each scrape.
 */

export type Labels = Record<string, string | number>;

export interface Counter {
  inc(labels?: Labels, by?: number): void;
}

export interface Gauge {
  set(labels: Labels, value: number): void;
  /** Drops every labelled value (a collector refilling from the database starts clean). */
  reset(): void;
}

export interface Histogram {
  observe(labels: Labels, value: number): void;
}

export interface MetricsRegistry {
  /** Returns the existing metric when called again with the same name (modules may share one). */
  counter(name: string, help: string): Counter;
  gauge(name: string, help: string): Gauge;
  histogram(name: string, help: string, buckets?: readonly number[]): Histogram;
  /** Runs before each scrape; a failing collector is reported as `baton_metrics_collector_errors_total`. */
  collect(fn: () => Promise<void> | void): void;
  render(): Promise<string>;
}

/** Seconds, from a fast local dispatch to a multi-hour agent run. */
export const DEFAULT_SECONDS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200, 14400] as const;

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

interface Family {
  type: 'counter' | 'gauge' | 'histogram';
  help: string;
  values: Map<string, { labels: Labels; value: number }>;
  buckets?: readonly number[];
  histograms?: Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>;
}

export function createMetricsRegistry(): MetricsRegistry {
  const families = new Map<string, Family>();
  const collectors: Array<() => Promise<void> | void> = [];

  function family(name: string, type: Family['type'], help: string, buckets?: readonly number[]): Family {
    if (!NAME.test(name)) throw new Error(`metric name must match ${NAME}, got "${name}"`);
    const existing = families.get(name);
    if (existing) {
      if (existing.type !== type) throw new Error(`metric ${name} is already a ${existing.type}`);
      return existing;
    }
    const created: Family = {
      type,
      help,
      values: new Map(),
      ...(buckets ? { buckets: [...buckets].sort((a, b) => a - b), histograms: new Map() } : {}),
    };
    families.set(name, created);
    return created;
  }

  const registry: MetricsRegistry = {
    counter(name, help) {
      const f = family(name, 'counter', help);
      return {
        inc(labels = {}, by = 1) {
          if (!(by >= 0)) return;
          const key = labelKey(labels);
          const slot = f.values.get(key);
          if (slot) slot.value += by;
          else f.values.set(key, { labels, value: by });
        },
      };
    },
    gauge(name, help) {
      const f = family(name, 'gauge', help);
      return {
        set(labels, value) {
          f.values.set(labelKey(labels), { labels, value });
        },
        reset() {
          f.values.clear();
        },
      };
    },
    histogram(name, help, buckets = DEFAULT_SECONDS_BUCKETS) {
      const f = family(name, 'histogram', help, buckets);
      return {
        observe(labels, value) {
          if (!Number.isFinite(value)) return;
          const key = labelKey(labels);
          let h = f.histograms!.get(key);
          if (!h) {
            h = { labels, counts: f.buckets!.map(() => 0), sum: 0, count: 0 };
            f.histograms!.set(key, h);
          }
          f.buckets!.forEach((le, i) => {
            if (value <= le) h.counts[i]! += 1;
          });
          h.sum += value;
          h.count += 1;
        },
      };
    },
    collect(fn) {
      collectors.push(fn);
    },
    async render() {
      const errors = registry.counter('baton_metrics_collector_errors_total', 'Collectors that failed during a scrape.');
      for (const fn of collectors) {
        try {
          await fn();
        } catch {
          errors.inc();
        }
      }
      const lines: string[] = [];
      for (const [name, f] of families) {
        lines.push(`# HELP ${name} ${escapeHelp(f.help)}`, `# TYPE ${name} ${f.type}`);
        if (f.type !== 'histogram') {
          for (const { labels, value } of f.values.values()) lines.push(`${name}${renderLabels(labels)} ${formatValue(value)}`);
          continue;
        }
        for (const h of f.histograms!.values()) {
          f.buckets!.forEach((le, i) => lines.push(`${name}_bucket${renderLabels({ ...h.labels, le: formatValue(le) })} ${h.counts[i]}`));
          lines.push(`${name}_bucket${renderLabels({ ...h.labels, le: '+Inf' })} ${h.count}`);
          lines.push(`${name}_sum${renderLabels(h.labels)} ${formatValue(h.sum)}`);
          lines.push(`${name}_count${renderLabels(h.labels)} ${h.count}`);
        }
      }
      return `${lines.join('\n')}\n`;
    },
  };
  return registry;
}

function labelKey(labels: Labels): string {
  return JSON.stringify(
    Object.keys(labels)
      .sort()
      .map((k) => [k, String(labels[k])]),
  );
}

function renderLabels(labels: Labels): string {
  const keys = Object.keys(labels);
  if (keys.length === 0) return '';
  return `{${keys.map((k) => `${k}="${String(labels[k]).replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`).join(',')}}`;
}

function escapeHelp(help: string): string {
  return help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function formatValue(value: number): string {
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return Number.isNaN(value) ? 'NaN' : String(value);
}
