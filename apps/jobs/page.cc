// The job service's web page: one HTML document with its script, over the
// REST API (service.h), with Debian's Vue 2 and Chart.js served by the
// service itself (/static/vue.js, /static/chart.js). The token comes from
// the URL the service prints (/?token=...) and is kept for the tab.
#include "apps/jobs/service.h"

namespace dflow::jobs {

const std::string& PageHtml() {
  static const std::string page = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>dflow jobs</title>
<script src="/static/vue.js"></script>
<script src="/static/chart.js"></script>
<style>
  body { font-family: sans-serif; margin: 0; color: #222; }
  header { background: #24364b; color: white; padding: 8px 16px; display: flex; gap: 16px; align-items: center; }
  header a { color: #cde; cursor: pointer; }
  header a.active { color: white; font-weight: bold; }
  main { padding: 16px; }
  table { border-collapse: collapse; }
  td, th { border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: left; }
  tr.job-row { cursor: pointer; }
  .status-running { color: #0a6; } .status-failed { color: #c22; } .status-stopped { color: #a60; }
  .status-succeeded { color: #06a; }
  pre#log { background: #111; color: #ddd; padding: 8px; height: 260px; overflow: auto; font-size: 12px; }
  .error { color: #c22; }
  label { display: inline-block; width: 130px; }
  form div { margin: 4px 0; }
</style>
</head>
<body>
<div id="app">
  <header>
    <b>dflow jobs</b>
    <a v-for="t in tabs" :id="'tab-' + t" :class="{active: tab === t}" @click="show(t)">{{ t }}</a>
  </header>
  <main>
    <p class="error" id="error" v-if="error">{{ error }}</p>

    <section v-if="tab === 'jobs'">
      <table>
        <tr><th>id</th><th>name</th><th>app</th><th>model</th><th>workers</th><th>status</th><th>reason</th></tr>
        <tr v-for="j in jobs" class="job-row" :id="'job-' + j.id" @click="open(j.id)">
          <td>{{ j.id }}</td><td>{{ j.name }}</td><td>{{ j.app }}</td><td>{{ j.model }}</td>
          <td>{{ j.workers }} ({{ j.strategy }})</td>
          <td :class="'status-' + j.status">{{ j.status }}</td><td>{{ j.reason }}</td>
        </tr>
      </table>
    </section>

    <section v-if="tab === 'job' && job">
      <h2>job {{ job.id }}: {{ job.name }}</h2>
      <p>status <b id="job-status" :class="'status-' + job.status">{{ job.status }}</b>
         <span id="job-reason">{{ job.reason }}</span></p>
      <p>{{ job.app }} / {{ job.model }}, {{ job.workers }} worker(s), {{ job.strategy }}, {{ job.backend }},
         {{ job.steps }} steps of batch {{ job.batch }}</p>
      <button id="stop-button" v-if="job.status === 'running'" @click="act('stop')">stop</button>
      <button id="resume-button" v-if="job.status === 'stopped' || job.status === 'failed'"
              @click="act('resume')">resume</button>
      <div v-if="job.eval"><h3>evaluation on {{ job.eval.dataset }}</h3>
        <table id="eval"><tr v-for="(value, name) in job.eval" v-if="typeof value === 'number'">
          <td>{{ name }}</td><td>{{ value.toPrecision(4) }}</td></tr></table></div>
      <h3>curve <small id="curve-points">{{ points }} points</small></h3>
      <div style="width: 640px; height: 260px"><canvas id="curve"></canvas></div>
      <h3>snapshots</h3>
      <ul id="snapshots">
        <li v-for="s in snapshots"><a :href="'/api/jobs/' + job.id + '/snapshots/' + s.file + '?token=' + token">{{ s.file }}</a>
          ({{ s.bytes }} bytes)</li>
      </ul>
      <h3>log</h3>
      <pre id="log">{{ log }}</pre>
    </section>

    <section v-if="tab === 'submit'">
      <form id="submit-form" @submit.prevent="submit">
        <div><label>name</label><input id="f-name" v-model="form.name"></div>
        <div><label>app</label><select id="f-app" v-model="form.app">
          <option v-for="m in models" :value="m.app">{{ m.app }}</option></select></div>
        <div><label>model</label><select id="f-model" v-model="form.model">
          <option v-for="name in modelsOf(form.app)" :value="name">{{ name }}</option></select></div>
        <div><label>dataset</label><select id="f-dataset" v-model.number="form.dataset_id">
          <option v-for="d in datasets" v-if="d.app === form.app" :value="d.id">{{ d.name }}</option></select></div>
        <div><label>evaluate on</label><select id="f-eval" v-model.number="form.eval_dataset_id">
          <option :value="0">(none)</option>
          <option v-for="d in datasets" v-if="d.app === form.app" :value="d.id">{{ d.name }}</option></select></div>
        <div><label>steps</label><input id="f-steps" type="number" v-model.number="form.steps"></div>
        <div><label>batch</label><input id="f-batch" type="number" v-model.number="form.batch"></div>
        <div><label>checkpoint every</label><input id="f-every" type="number" v-model.number="form.checkpoint_every"></div>
        <div><label>workers</label><input id="f-workers" type="number" v-model.number="form.workers"></div>
        <div><label>strategy</label><select id="f-strategy" v-model="form.strategy">
          <option>ring</option><option>ps</option></select></div>
        <div v-if="form.strategy === 'ps'"><label>ps tasks</label><input id="f-ps" type="number" v-model.number="form.ps"></div>
        <div><label>back-end</label><select id="f-backend" v-model="form.backend">
          <option>local</option><option>mpirun</option><option>slurm</option></select></div>
        <div><label>nodes</label><input id="f-nodes" v-model="form.nodes" placeholder="host1,host2 (mpirun, slurm)"></div>
        <button id="submit-button" type="submit">submit</button>
      </form>
    </section>

    <section v-if="tab === 'datasets'">
      <table><tr><th>id</th><th>name</th><th>app</th><th>path</th></tr>
        <tr v-for="d in datasets" class="dataset-row"><td>{{ d.id }}</td><td>{{ d.name }}</td><td>{{ d.app }}</td>
          <td>{{ d.path }}</td></tr></table>
      <form id="dataset-form" @submit.prevent="addDataset">
        <h3>register a folder of the data root</h3>
        <div><label>name</label><input id="d-name" v-model="dataset.name"></div>
        <div><label>app</label><select id="d-app" v-model="dataset.app">
          <option v-for="m in models" :value="m.app">{{ m.app }}</option></select></div>
        <div><label>path</label><input id="d-path" v-model="dataset.path"></div>
        <button id="dataset-button" type="submit">register</button>
      </form>
      <form id="upload-form" @submit.prevent="upload">
        <h3>or upload an archive (.tar, .tar.gz, .tar.xz, .zip)</h3>
        <div><label>name</label><input id="u-name" v-model="dataset.name"></div>
        <div><label>app</label><select id="u-app" v-model="dataset.app">
          <option v-for="m in models" :value="m.app">{{ m.app }}</option></select></div>
        <div><label>archive</label><input id="u-file" type="file" ref="archive"></div>
        <button id="upload-button" type="submit">upload</button>
      </form>
    </section>

    <section v-if="tab === 'models'">
      <table><tr><th>app</th><th>models</th></tr>
        <tr v-for="m in models"><td>{{ m.app }}</td><td>{{ m.models.join(', ') }}</td></tr></table>
    </section>

    <section v-if="tab === 'nodes'">
      <table><tr><th>node</th><th>status</th><th>cores</th><th>memory (GiB)</th><th>load</th><th>GPUs</th></tr>
        <tr v-for="n in nodes" class="node-row"><td>{{ n.name }}</td><td>{{ n.status }}</td><td>{{ n.info.cores }}</td>
          <td>{{ (n.info.memory_bytes / 1073741824).toFixed(1) }}</td><td>{{ n.info.load }}</td>
          <td>{{ n.info.gpus.join(', ') }}</td></tr></table>
    </section>
  </main>
</div>
<script>
const params = new URLSearchParams(location.search);
if (params.get('token')) sessionStorage.setItem('dflow-token', params.get('token'));
const token = sessionStorage.getItem('dflow-token') || '';

async function api(path, options = {}) {
  options.headers = Object.assign({'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json'},
                                  options.headers || {});
  const response = await fetch(path, options);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

let chart = null;
let events = null;

new Vue({
  el: '#app',
  data: {
    tabs: ['jobs', 'submit', 'datasets', 'models', 'nodes'], tab: 'jobs', error: '', token: token,
    jobs: [], job: null, log: '', snapshots: [], points: 0, datasets: [], models: [], nodes: [],
    form: {name: 'job', app: 'count', model: 'countnet', dataset_id: null, eval_dataset_id: 0, steps: 100, batch: 8,
           checkpoint_every: 10, workers: 2, strategy: 'ring', ps: 1, backend: 'local', nodes: ''},
    dataset: {name: '', app: 'count', path: ''},
  },
  created() {
    this.refresh();
    setInterval(() => this.refresh(), 2000);
  },
  methods: {
    // A user's action clears the last error; the periodic refresh does not.
    async guard(work, clears = true) {
      if (clears) this.error = '';
      try { await work(); } catch (e) { this.error = e.message; }
    },
    show(tab) { this.tab = tab; if (events) { events.close(); events = null; } this.refresh(); },
    modelsOf(app) { const m = this.models.find(x => x.app === app); return m ? m.models : []; },
    refresh() {
      return this.guard(async () => {
        this.jobs = (await api('/api/jobs')).reverse();
        this.datasets = await api('/api/datasets');
        this.models = await api('/api/models');
        this.nodes = await api('/api/nodes');
        if (this.tab === 'job' && this.job) await this.loadJob(this.job.id);
      }, false);
    },
    async loadJob(id) {
      this.job = await api('/api/jobs/' + id);
      this.snapshots = await api('/api/jobs/' + id + '/snapshots');
      this.drawCurve(await api('/api/jobs/' + id + '/metrics'));
    },
    open(id) {
      this.tab = 'job';
      this.log = '';
      this.guard(async () => {
        await this.loadJob(id);
        if (events) events.close();
        events = new EventSource('/api/jobs/' + id + '/events?token=' + encodeURIComponent(token));
        events.addEventListener('log', e => {
          this.log += e.data + '\n';
          this.$nextTick(() => { const pre = document.getElementById('log'); if (pre) pre.scrollTop = pre.scrollHeight; });
        });
        events.addEventListener('status', e => { this.job = Object.assign({}, this.job, JSON.parse(e.data)); });
        events.onerror = () => { events.close(); };
      });
    },
    drawCurve(metrics) {
      this.points = metrics.length;
      this.$nextTick(() => {
        const canvas = document.getElementById('curve');
        if (!canvas) return;
        const steps = metrics.map(m => m.step);
        const loss = metrics.map(m => m.loss);
        if (!chart || chart.canvas !== canvas) {
          if (chart) chart.destroy();
          chart = new Chart(canvas, {type: 'line', options: {animation: false, maintainAspectRatio: false},
            data: {labels: steps, datasets: [{label: 'loss', data: loss, borderColor: '#24364b', pointRadius: 0}]}});
        } else {
          chart.data.labels = steps;
          chart.data.datasets[0].data = loss;
          chart.update();
        }
      });
    },
    act(what) {
      return this.guard(async () => {
        await api('/api/jobs/' + this.job.id + '/' + what, {method: 'POST'});
        if (what === 'resume') this.open(this.job.id); else await this.loadJob(this.job.id);
      });
    },
    submit() {
      return this.guard(async () => {
        const body = Object.assign({}, this.form);
        body.nodes = this.form.nodes ? this.form.nodes.split(',').map(s => s.trim()).filter(s => s) : [];
        if (body.strategy !== 'ps') delete body.ps;
        const job = await api('/api/jobs', {method: 'POST', body: JSON.stringify(body)});
        this.open(job.id);
      });
    },
    upload() {
      return this.guard(async () => {
        const file = this.$refs.archive.files[0];
        if (!file) throw new Error('choose an archive first');
        const query = '?name=' + encodeURIComponent(this.dataset.name) + '&app=' + encodeURIComponent(this.dataset.app);
        await api('/api/datasets/upload' + query,
                  {method: 'POST', body: file, headers: {'Content-Type': 'application/octet-stream'}});
        await this.refresh();
      });
    },
    addDataset() {
      return this.guard(async () => {
        await api('/api/datasets', {method: 'POST', body: JSON.stringify(this.dataset)});
        await this.refresh();
      });
    },
  },
});
</script>
</body>
</html>
)HTML";
  return page;
}

}  // namespace dflow::jobs
