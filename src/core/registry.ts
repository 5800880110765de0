import type { PipelineDef } from './pipeline.js'
import type { StageDef } from './stage.js'

/** The names a user can put in `pipe run NAME` and in a JSON pipeline's `stages[].stage`. */
export class Registry {
  private readonly stageDefs = new Map<string, StageDef>()
  private readonly pipelineDefs = new Map<string, PipelineDef>()

  addStage(def: StageDef): this {
    if (this.stageDefs.has(def.name)) throw new Error(`stage ${def.name} registered twice`)
    this.stageDefs.set(def.name, def)
    return this
  }

  addPipeline(def: PipelineDef): this {
    if (this.pipelineDefs.has(def.name)) throw new Error(`pipeline ${def.name} registered twice`)
    this.pipelineDefs.set(def.name, def)
    return this
  }

  stage(name: string): StageDef | undefined { return this.stageDefs.get(name) }
  pipeline(name: string): PipelineDef | undefined { return this.pipelineDefs.get(name) }
  stages(): StageDef[] { return [...this.stageDefs.values()].sort((a, b) => a.name.localeCompare(b.name)) }
  pipelines(): PipelineDef[] { return [...this.pipelineDefs.values()].sort((a, b) => a.name.localeCompare(b.name)) }
}
