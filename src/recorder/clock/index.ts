/**
 * The recorder's clock, in one import for the daemon (pipelines/record.ts): the interface, its
 * implementations (chrony, `--clock none`, and the simulated clock of tests and the demo) and the probe
 * that chooses between chrony and none.
 */
export type { ClockReading, ClockStatus, RecorderClock } from './recorder-clock.js'
export { ChronyClock, probeChronyc, type ChronyClockOptions, type ChronycProbe } from './chrony-clock.js'
export { NoneClock } from './none-clock.js'
export { SimulatedClock } from './simulated-clock.js'
export { RealtimeReader, SYSTEM_CLOCKS, type ClockSources, type ClockStep } from './realtime.js'
