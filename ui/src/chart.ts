// A rolling line chart on a canvas: a fixed window of points per series, y scaled to the data.
// The canvas carries data-points and data-max so a test (or a curious user) can read what it shows.

const WINDOW = 90;
const COLORS = ['#4f8cff', '#f5a524', '#2fbf71', '#e5484d', '#a36bff', '#20b2aa'];

export class LineChart {
  private readonly series = new Map<string, (number | null)[]>();
  private points = 0;
  private max = 0;

  constructor(
    private readonly canvas: HTMLCanvasElement,
    private readonly unit: string,
  ) {}

  /** One poll's values; a series first seen now starts empty, one missing now gets a gap. */
  push(values: Readonly<Record<string, number | null>>): void {
    for (const name of Object.keys(values)) if (!this.series.has(name)) this.series.set(name, new Array<number | null>(this.points).fill(null));
    for (const [name, data] of this.series) {
      const value = values[name] ?? null;
      data.push(value === null || !Number.isFinite(value) ? null : value);
      if (data.length > WINDOW) data.shift();
      if (value !== null && value > this.max) this.max = value;
    }
    this.points = Math.min(this.points + 1, WINDOW);
    this.canvas.dataset['points'] = String(this.points);
    this.canvas.dataset['max'] = String(this.max);
    this.draw();
  }

  private draw(): void {
    const context = this.canvas.getContext('2d');
    if (context === null) return;
    const { width, height } = this.canvas;
    context.clearRect(0, 0, width, height);
    const visible = [...this.series.values()].flat().filter((v): v is number => v !== null);
    const top = Math.max(...visible, 1e-9) * 1.15;
    context.strokeStyle = '#2a3140';
    context.lineWidth = 1;
    for (let i = 1; i < 4; i++) {
      const y = Math.round((height * i) / 4) + 0.5;
      context.beginPath();
      context.moveTo(0, y);
      context.lineTo(width, y);
      context.stroke();
    }
    context.font = '11px system-ui, sans-serif';
    context.fillStyle = '#8a94a6';
    context.fillText(`${formatScale(top)} ${this.unit}`, 4, 12);
    let legendX = 4;
    [...this.series].forEach(([name, data], index) => {
      const color = COLORS[index % COLORS.length]!;
      context.strokeStyle = color;
      context.lineWidth = 2;
      context.beginPath();
      let drawing = false;
      data.forEach((value, i) => {
        if (value === null) {
          drawing = false;
          return;
        }
        // The newest point at the right edge; older ones scroll left.
        const x = width - ((data.length - 1 - i) / (WINDOW - 1)) * width;
        const y = height - 4 - (value / top) * (height - 20);
        if (drawing) context.lineTo(x, y);
        else context.moveTo(x, y);
        drawing = true;
      });
      context.stroke();
      const last = [...data].reverse().find((v) => v !== null);
      const label = `${name} ${last === undefined || last === null ? '—' : formatScale(last)}`;
      context.fillStyle = color;
      context.fillText(label, legendX, height - 6);
      legendX += context.measureText(label).width + 12;
    });
  }
}

function formatScale(value: number): string {
  if (value >= 100) return value.toFixed(0);
  if (value >= 10) return value.toFixed(1);
  return value.toFixed(2);
}
