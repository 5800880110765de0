import type { Writable } from 'node:stream'

/** A problem found in the data. Verifiers collect every finding instead of stopping at the first. */
export interface Finding {
  /** 1-based line number, or null (or absent) for findings about the whole input or not about lines. */
  line?: number | null
  code: string
  detail: string
  /** Extra fields a pipeline adds to its findings (e.g. `check`, `path`). */
  [extra: string]: unknown
}

/** How many findings of one code a run reports by default (--max-findings); the rest are counted. */
export const DEFAULT_MAX_FINDINGS_PER_CODE = 1000

/**
 * Streams findings out as they arrive so that memory stays bounded however many lines fail: text mode
 * prints the first `textLimit` and counts the rest; JSON mode writes the findings into the `findings`
 * array of the run's one JSON object, which the runner closes at the end. Either way only the first
 * `maxPerCode` findings of each code are reported: a small hostile file (a million empty lines) must not
 * make a report of a hundred megabytes. The rest are counted (`leftOut`); every finding counts for `count`.
 */
export class FindingSink {
  count = 0
  /** Findings counted but not reported, past `maxPerCode` of their code. */
  leftOut = 0
  /** Notes given (`note`): what a run did not check, or chose not to, which leaves it ok. */
  notes = 0
  private reported = 0
  private readonly perCode = new Map<string, number>()
  private readonly maxPerCode: number
  private readonly json: boolean
  private readonly out: Writable
  private readonly textLimit: number
  private readonly format: (f: Finding) => string
  private readonly toJson: (f: Finding) => object

  constructor(opts: { json: boolean; out: Writable; textLimit?: number; maxPerCode?: number; format?: (f: Finding) => string; toJson?: (f: Finding) => object }) {
    this.json = opts.json
    this.maxPerCode = opts.maxPerCode ?? DEFAULT_MAX_FINDINGS_PER_CODE
    this.out = opts.out
    this.textLimit = opts.textLimit ?? 100
    this.format = opts.format ?? defaultFormat
    this.toJson = opts.toJson ?? ((f) => f)
    if (this.json) this.out.write('{"findings":[')
  }

  add(finding: Finding): void {
    this.count++
    // Codes are the program's own, so this map holds at most as many entries as there are codes.
    const ofCode = (this.perCode.get(finding.code) ?? 0) + 1
    this.perCode.set(finding.code, ofCode)
    if (ofCode > this.maxPerCode) {
      this.leftOut++
      return
    }
    this.reported++
    if (this.json) {
      this.out.write((this.reported > 1 ? ',' : '') + JSON.stringify(this.toJson(finding)))
    } else if (this.reported <= this.textLimit) {
      this.out.write(this.format(finding) + '\n')
    }
  }

  /**
   * A note: not a finding, the run stays ok. Text mode prints the first `textLimit` as `note: ` and the
   * finding's line, so that a reader sees what was not checked and why; JSON mode, whose object a pipeline
   * may have published the shape of, counts it only.
   */
  note(note: Finding): void {
    this.notes++
    if (!this.json && this.notes <= this.textLimit) this.out.write(`note: ${this.format(note)}\n`)
  }

  /** Text mode: how many findings within the per-code cap were not printed. */
  get hidden(): number {
    return this.json ? 0 : Math.max(0, this.reported - this.textLimit)
  }

  /** Text mode: how many notes were counted but not printed. */
  get hiddenNotes(): number {
    return this.json ? 0 : Math.max(0, this.notes - this.textLimit)
  }
}

/** `path: line N: code: detail`, with the path and a `[check N]` when a pipeline's findings carry them. */
function defaultFormat(f: Finding): string {
  const path = typeof f.path === 'string' ? `${f.path}: ` : ''
  const check = typeof f.check === 'number' ? ` [check ${f.check}]` : ''
  return `${path}${f.line === null || f.line === undefined ? 'file' : 'line ' + f.line}: ${f.code}${check}: ${f.detail}`
}
