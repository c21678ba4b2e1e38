// Boost.Graph over the tasks of a schedule: deadlock cycles and the critical path.
#include "ppsim/sim/task_graph.hpp"

#include "ppsim/sim/dependencies.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/grid.hpp"
#include "ppsim/sim/index.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <boost/graph/topological_sort.hpp>
#include <fmt/format.h>
#include <map>

namespace ppsim {

namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

// Vertices are tasks in device-major order; edges go from a task to the tasks that wait for it.
struct TaskGraph {
  Graph graph;
  std::vector<Slot> slot;               // vertex -> place
  std::vector<std::vector<int>> vertex;  // [device][index] -> vertex
};

TaskGraph build_graph(const Schedule& s) {
  const Topology topo(s);
  const int S = s.stages();
  TaskGraph g;
  g.vertex.resize(s.order.size());
  const PartIndex index(S, s.microbatches);
  std::vector<int> producer(index.size(), -1);
  int n = 0;
  for (std::size_t d = 0; d < s.order.size(); ++d) {
    g.vertex[d].resize(s.order[d].size());
    for (std::size_t i = 0; i < s.order[d].size(); ++i) {
      g.vertex[d][i] = n++;
      g.slot.push_back(Slot{static_cast<int>(d), static_cast<int>(i)});
    }
  }
  g.graph = Graph(ix(n));
  const auto in_range = [&](const Part& q) {
    return q.stage >= 0 && q.stage < S && q.microbatch >= 0 && q.microbatch < s.microbatches;
  };
  for (std::size_t d = 0; d < s.order.size(); ++d)
    for (std::size_t i = 0; i < s.order[d].size(); ++i)
      for_each_product(s.order[d][i], [&](const Part& q) {
        if (in_range(q)) producer[index(q)] = g.vertex[d][i];
      });
  for (std::size_t d = 0; d < s.order.size(); ++d) {
    for (std::size_t i = 0; i < s.order[d].size(); ++i) {
      const int v = g.vertex[d][i];
      if (i > 0) boost::add_edge(ix(g.vertex[d][i - 1]), ix(v), g.graph);
      const Task& t = s.order[d][i];
      bool routed = topo.on_route(t.microbatch, t.stage) &&
                    (t.kind != Kind::FB || topo.on_route(t.microbatch2, t.stage2));
      if (!routed) continue;
      for_each_dependency(topo, t, [&](const Part& q) {
        const int u = producer[index(q)];
        if (u >= 0 && u != v) boost::add_edge(ix(u), ix(v), g.graph);
      });
    }
  }
  return g;
}

struct CycleVisitor : boost::default_dfs_visitor {
  std::vector<std::size_t>* parent;
  std::vector<std::size_t>* cycle;
  template <class Edge, class G> void tree_edge(Edge e, const G& g) {
    (*parent)[boost::target(e, g)] = boost::source(e, g);
  }
  template <class Edge, class G> void back_edge(Edge e, const G& g) {
    if (!cycle->empty()) return;
    const auto u = boost::source(e, g), v = boost::target(e, g);
    for (auto w = u; w != v; w = (*parent)[w]) cycle->push_back(w);
    cycle->push_back(v);
    std::reverse(cycle->begin(), cycle->end());
  }
};

std::string task_text(const Schedule& s, const Slot& at) {
  return to_string(s.order[ix(at.device)][ix(at.index)], s.notation);
}

} // namespace

std::vector<Slot> find_cycle(const Schedule& schedule) {
  const TaskGraph g = build_graph(schedule);
  const auto n = boost::num_vertices(g.graph);
  std::vector<std::size_t> parent(n), cycle;
  for (std::size_t i = 0; i < n; ++i) parent[i] = i;
  CycleVisitor vis;
  vis.parent = &parent;
  vis.cycle = &cycle;
  std::vector<boost::default_color_type> color(n);
  boost::depth_first_search(
      g.graph, boost::visitor(vis).color_map(boost::make_iterator_property_map(
                   color.begin(), boost::get(boost::vertex_index, g.graph))));
  std::vector<Slot> out;
  for (auto v : cycle) out.push_back(g.slot[v]);
  return out;
}

std::string describe_deadlock(const Schedule& s, const std::vector<int>& next) {
  const Topology topo(s);
  const int S = s.stages();
  const PartIndex index(S, s.microbatches);
  std::map<std::size_t, Slot> where;  // part -> the task producing it
  for (std::size_t d = 0; d < s.order.size(); ++d)
    for (std::size_t i = 0; i < s.order[d].size(); ++i)
      for_each_product(s.order[d][i], [&](const Part& q) {
        if (q.stage >= 0 && q.stage < S && q.microbatch >= 0 && q.microbatch < s.microbatches)
          where.emplace(index(q), Slot{static_cast<int>(d), static_cast<int>(i)});
      });
  std::string msg = "deadlock: no device can progress\n";
  std::vector<Slot> marks;
  for (std::size_t d = 0; d < s.order.size(); ++d) {
    const int i = next[d];
    if (i >= static_cast<int>(s.order[d].size())) {
      msg += fmt::format("  device {}: finished\n", d);
      continue;
    }
    const Task& t = s.order[d][ix(i)];
    marks.push_back(Slot{static_cast<int>(d), i});
    std::string waits;
    for_each_dependency(topo, t, [&](const Part& q) {
      auto it = where.find(index(q));
      // NOTE: a file's vocabulary names what is waited for by the cell that makes it: PyTorch's
      // full backward `1B0` makes both of ppsim's parts 1B0 and 1W0.
      const Task part = Task::make(q.kind, q.stage, q.microbatch);
      const std::string name = s.notation != Notation::ppsim && it != where.end()
                                   ? task_text(s, it->second)
                                   : to_string(part, s.notation);
      if (it == where.end()) {
        waits += fmt::format("; waits for {}, which no device runs", name);
        return;
      }
      const Slot at = it->second;
      if (at.index >= next[ix(at.device)])
        waits += fmt::format("; waits for {} (device {}, position {}, not yet run)", name,
                             at.device, at.index);
    });
    msg += fmt::format("  device {}: blocked at position {} on {}{}\n", d, i,
                       to_string(t, s.notation), waits);
  }
  const auto cycle = find_cycle(s);
  if (!cycle.empty()) {
    msg += "  cycle (each must finish before the next can start):";
    for (const Slot& c : cycle) msg += fmt::format(" {}@dev{} ->", task_text(s, c), c.device);
    msg += fmt::format(" {}@dev{}\n", task_text(s, cycle.front()), cycle.front().device);
  }
  msg += format_grid(s, marks);
  if (!msg.empty() && msg.back() == '\n') msg.pop_back();
  return msg;
}

CriticalPath critical_path(const Schedule& s, const CostModel& costs) {
  const TaskGraph g = build_graph(s);
  const auto n = boost::num_vertices(g.graph);
  std::vector<std::size_t> topo_order;
  topo_order.reserve(n);
  try {
    boost::topological_sort(g.graph, std::back_inserter(topo_order));
  } catch (const boost::not_a_dag&) {
    throw ScheduleError(describe_deadlock(s, std::vector<int>(s.order.size(), 0)));
  }
  std::reverse(topo_order.begin(), topo_order.end());
  std::vector<Ticks> finish(n, 0);
  std::vector<std::ptrdiff_t> pred(n, -1);
  const auto task_at = [&](std::size_t v) -> const Task& {
    return s.order[ix(g.slot[v].device)][ix(g.slot[v].index)];
  };
  for (auto v : topo_order) finish[v] = costs.duration(task_at(v));
  for (auto u : topo_order) {
    for (auto [e, end] = boost::out_edges(u, g.graph); e != end; ++e) {
      const auto v = boost::target(*e, g.graph);
      const bool cross = g.slot[u].device != g.slot[v].device;
      const Ticks start = add_ticks(finish[u], cross ? costs.comm : 0);
      const Ticks f = add_ticks(start, costs.duration(task_at(v)));
      if (f > finish[v]) {
        finish[v] = f;
        pred[v] = static_cast<std::ptrdiff_t>(u);
      }
    }
  }
  CriticalPath cp;
  if (n == 0) return cp;
  std::size_t last = 0;
  for (std::size_t v = 1; v < n; ++v)
    if (finish[v] > finish[last]) last = v;
  cp.length = finish[last];
  for (auto v = static_cast<std::ptrdiff_t>(last); v >= 0; v = pred[ix(static_cast<int>(v))])
    cp.tasks.push_back(g.slot[static_cast<std::size_t>(v)]);
  std::reverse(cp.tasks.begin(), cp.tasks.end());
  return cp;
}

} // namespace ppsim
