// The engines the archive tests read the bucket with: a Python venv (`.toolchains/venv-spark`) holding
// pyspark, pyarrow, polars and DuckDB with httpfs at pinned versions, and the jars Spark's `s3a://` needs
// (`.toolchains/spark/jars`: hadoop-aws at the version of the Hadoop pyspark bundles, and what it
// depends on, fetched from Maven Central by `mvn dependency:copy-dependencies`). Spark needs Java 17.

import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { toolchainsDir, type Toolchain } from './toolchain.js';

/**
 * Versions PyPI serves; pyspark 4.3.0 bundles Hadoop 3.5.0 (jars/hadoop-client-api-3.5.0.jar).
 * DuckDB's httpfs comes as a wheel of the same DuckDB version, so no extension download is needed.
 */
export const PIP_PACKAGES = [
  'pyspark==4.3.0',
  'pyarrow==26.0.1',
  'polars==2.1.0',
  'duckdb==1.4.4',
  'duckdb-ext-httpfs==1.4.4.20260205',
] as const;
/** Must equal the Hadoop pyspark bundles: s3a's classes live in hadoop-aws, built per Hadoop release. */
export const HADOOP_AWS = 'org.apache.hadoop:hadoop-aws:3.5.0';
const MIN_PYTHON: [number, number] = [3, 10];
const MIN_JAVA = 17;

const POM = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>pmtape.local</groupId>
  <artifactId>spark-s3a-jars</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>${HADOOP_AWS.split(':')[0]}</groupId>
      <artifactId>${HADOOP_AWS.split(':')[1]}</artifactId>
      <version>${HADOOP_AWS.split(':')[2]}</version>
    </dependency>
  </dependencies>
</project>
`;

export const venvDir = (): string => join(toolchainsDir(), 'venv-spark');
const sparkDir = (): string => join(toolchainsDir(), 'spark');
/** The folder of jars to put on Spark's class path (`spark.jars`) for s3a://. */
export const sparkJarsDir = (): string => join(sparkDir(), 'jars');
/** The jars of sparkJarsDir(), comma separated as `spark.jars` takes them. */
export const sparkJars = (): string =>
  readdirSync(sparkJarsDir())
    .filter((f) => f.endsWith('.jar'))
    .map((f) => join(sparkJarsDir(), f))
    .join(',');
const python = (): string => join(venvDir(), 'bin', 'python');
const stampFile = (): string => join(venvDir(), 'pmtape-stamp.json');
const stamp = (): string => JSON.stringify({ pip: PIP_PACKAGES, jars: HADOOP_AWS, pom: POM });

async function run(cmd: string, args: string[], what: string, cwd = process.cwd()): Promise<string> {
  try {
    const r = await promisify(execFile)(cmd, args, { cwd, maxBuffer: 64 * 1024 * 1024 });
    return `${r.stdout}${r.stderr}`;
  } catch (e) {
    const x = e as { code?: string | number; stderr?: string; stdout?: string; message: string };
    if (x.code === 'ENOENT') throw new Error(`toolchains: spark: ${cmd} not found: ${what}`);
    const tail = `${x.stdout ?? ''}${x.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
    throw new Error(`toolchains: spark: \`${cmd} ${args.join(' ')}\` failed:\n${tail || x.message}`);
  }
}

async function checkPrereqs(): Promise<void> {
  const py = await run(
    'python3',
    ['--version'],
    `install Python >= ${MIN_PYTHON.join('.')} (with venv) for the Spark, pyarrow and polars tests`,
  );
  const m = /Python (\d+)\.(\d+)/.exec(py);
  if (!m || Number(m[1]) < MIN_PYTHON[0] || (Number(m[1]) === MIN_PYTHON[0] && Number(m[2]) < MIN_PYTHON[1])) {
    throw new Error(`toolchains: spark: Python ${MIN_PYTHON.join('.')} or newer is needed, found "${py.trim()}"`);
  }
  const java = await run(
    'java',
    ['-version'],
    `install Java ${MIN_JAVA} (e.g. apt-get install openjdk-${MIN_JAVA}-jre-headless): Spark runs on it`,
  );
  const v = /version "(\d+)/.exec(java);
  if (!v || Number(v[1]) < MIN_JAVA)
    throw new Error(`toolchains: spark: Java ${MIN_JAVA} or newer is needed, found "${java.split('\n')[0]}"`);
  await run('mvn', ['--version'], 'install Maven (apt-get install maven): it fetches hadoop-aws and its AWS SDK from Maven Central');
}

export const toolchain: Toolchain = {
  name: 'spark',
  describe: `Python venv with ${PIP_PACKAGES.join(', ')} and ${HADOOP_AWS} jars (needs Python >= ${MIN_PYTHON.join('.')}, Java ${MIN_JAVA}, Maven and PyPI + Maven Central reach)`,
  locate(): string | null {
    try {
      return existsSync(python()) && existsSync(sparkJarsDir()) && readFileSync(stampFile(), 'utf8') === stamp() ? python() : null;
    } catch {
      return null;
    }
  },
  async ensure(log): Promise<void> {
    if (this.locate()) return;
    await checkPrereqs();
    log(`toolchains: creating the Python venv ${venvDir()} ...`);
    await rm(stampFile(), { force: true });
    await run('python3', ['-m', 'venv', venvDir()], 'install Python 3 with its venv module');
    log(`toolchains: pip install ${PIP_PACKAGES.join(' ')} (~500 MB, a few minutes) ...`);
    await run(python(), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', ...PIP_PACKAGES], 'the venv has no python');
    const bundled = await run(
      python(),
      [
        '-c',
        'import glob, os, pyspark; print(" ".join(os.path.basename(p) for p in glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "hadoop-client-api-*.jar"))))',
      ],
      'the venv has no python',
    );
    const want = `hadoop-client-api-${HADOOP_AWS.split(':')[2]}.jar`;
    if (!bundled.includes(want))
      throw new Error(
        `toolchains: spark: pyspark bundles ${bundled.trim() || 'no hadoop-client-api jar'}, not ${want}: set HADOOP_AWS in tools/toolchains/spark.ts to its Hadoop version`,
      );
    log(`toolchains: fetching ${HADOOP_AWS} and its dependencies from Maven Central (mvn, ~650 MB the first time) ...`);
    await mkdir(sparkDir(), { recursive: true });
    await writeFile(join(sparkDir(), 'pom.xml'), POM);
    const partial = join(sparkDir(), 'jars.partial');
    await rm(partial, { recursive: true, force: true });
    await run(
      'mvn',
      ['-q', '-B', 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${partial}`],
      'install Maven',
      sparkDir(),
    );
    await rm(sparkJarsDir(), { recursive: true, force: true });
    await rename(partial, sparkJarsDir());
    await writeFile(stampFile(), stamp());
    log(`toolchains: spark ready (${python()}, jars in ${sparkJarsDir()})`);
  },
};
