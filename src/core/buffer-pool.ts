/**
 * Buffers of one size handed out and taken back: a buffer that went to another thread and came back is
 * filled again instead of a new one being allocated (at a megabyte a batch, allocation and the GC it
 * brings were measurable). At most `keep` are held; any other size given back is left to the GC, so an
 * oversized buffer made for one large item is never kept.
 */
export class BufferPool {
  private readonly spare: ArrayBuffer[] = []

  constructor(readonly bytes: number, private readonly keep: number) {}

  /** A buffer of the pool's size: one given back, else a new one (zero-filled). */
  take(): ArrayBuffer {
    return this.spare.pop() ?? new ArrayBuffer(this.bytes)
  }

  /** Takes back a buffer its receiver is done with (kept only if it is the pool's size and there is room). */
  give(buffer: ArrayBuffer): void {
    if (buffer.byteLength === this.bytes && this.spare.length < this.keep) this.spare.push(buffer)
  }
}
