"""Offline replica of `vitrine-loadtest quality`'s split on an orders dataset, for
finding which pair counts and seeds a zone would need (docs/quality.md: "Where the
Instacart sample's last hits are" and "A basket line as a step of the visit").

Each visitor's last H interactions are the questions (round by round, as the tool
asks them); pairs are counted exactly from every visitor's interactions before the
round, with no bound on partners and no damping, and a visitor's seeds score the
products new to them; a hit is the question's product in the top 10.

    H=10 DS=instacart-sample python3 loadtest/datasets/replica.py distF:persF:10 sr:sr:40

Each argument is PAIRS:SEEDS:WINDOW. PAIRS: `sr` sequential rules' pairs (every two
interactions within WINDOW, weighing 1/distance), `seqo` the same over placed orders
only, `distF` the co-purchase lists as the server counts them (an order's lines by
their distance, each with the 9 distinct purchases before it; BACK changes the 9),
`seqdF1` the order's lines with the earlier distinct purchases at their distance in
the sequence, `cv` the server's co-purchase pairs plus co-view pairs over every
interaction (window 10); a trailing `b` counts the basket being filled as well as
placed orders (`cv`'s co-view pairs weigh CVW, 1 by default, against its co-purchase
pairs). SEEDS: `sr` sequential rules' (the latest 20, 1/age), `pers`
`personalized`'s defaults (the basket, then the purchases at 0.25, repeats kept),
`persF` the purchases distinct as the server keeps them, `...V` the recent
interactions as views too. Prints the hits on the first line of a new order and
inside one, and their sum.
"""
import csv,collections,sys,math
H=int(__import__("os").environ.get("H","10"))
CVW=float(__import__('os').environ.get('CVW','1'))
BACK=int(__import__("os").environ.get("BACK","9"))
vis=[];seqs={}
for row in csv.DictReader(open('target/datasets/'+__import__('os').environ.get('DS','instacart-sample')+'/interactions.csv')):
    v=row['visitor']
    if v not in seqs: vis.append(v); seqs[v]=[]
    seqs[v].append((int(row['timestamp']),row['product'],row['event']))
for v in vis: seqs[v].sort(key=lambda x:x[0])

def orders_of(s):
    """split a step list into orders (list of lists); the last may be unfinished"""
    out=[[]]
    for t,p,e in s:
        out[-1].append(p)
        if e=='order': out.append([])
    return out

def fit(round_, mode, w=10):
    CV=mode=='cv'
    if CV: mode='distF'
    BASK=mode.endswith('b')
    if BASK: mode=mode[:-1]
    rules=collections.defaultdict(lambda: collections.defaultdict(float))
    for v in vis:
        s=seqs[v]; cut=len(s)-H-1
        n = cut+round_ if cut>=0 else len(s)
        part=s[:n]
        if CV:
            items=[p for _,p,_ in part]
            for x,a in enumerate(items):
                for d,b in enumerate(items[x+1:x+1+10]):
                    if a==b: continue
                    wt=CVW/(d+1); rules[a][b]+=wt; rules[b][a]+=wt
        if mode in ('sr','seqo'):
            items=[p for _,p,_ in part]
            if mode=='seqo':
                items=[p for o in orders_of(part)[:-1] for p in o]
            for x,a in enumerate(items):
                for d,b in enumerate(items[x+1:x+1+w]):
                    if a==b: continue
                    wt=1/(d+1); rules[a][b]+=wt; rules[b][a]+=wt
        else:
            os_=orders_of(part)
            done=os_[:-1]  # only placed orders count
            if BASK:
                done=[o for o in os_ if o]
            earlier=[]
            for o in done:
                for i,a in enumerate(o):
                    for j in range(i+1,len(o)):
                        b=o[j]
                        if mode=='set': wt=1.0
                        elif mode=='dist': wt=1/(j-i)
                        elif mode=='mix': wt=0.5+0.5/(j-i)
                        elif mode=='dist3': wt=1/(j-i) if j-i<=3 else 0
                        elif mode in ('distw','noback','seqback','seqd','distF','distL','seqdF','seqd1','seqback2','seqdF1'): wt=1/(j-i) if j-i<=w else 0
                        if wt: rules[a][b]+=wt; rules[b][a]+=wt
                if mode=='noback': earlier.extend(o); continue
                if mode in ('seqd','distL','distF','seqdF','seqd1','seqdF1'):
                    if mode in ('distF','seqdF','seqdF1'):
                        first=[]
                        for e in earlier:
                            if e not in first: first.append(e)
                        back=[e for e in reversed(first) if e not in o][:BACK]
                    else:
                        back=[e for e in reversed(earlier) if e not in o]
                        seen=[]
                        for e in back:
                            if e not in seen: seen.append(e)
                        back=[e for e in seen][:BACK]
                    if mode in ('distF','distL'):
                        for bi,e in enumerate(back):
                            wt=1/(bi+2)
                            if bi+2<=w:
                                for a in o:
                                    rules[a][e]+=wt; rules[e][a]+=wt
                        earlier.extend(o); continue
                    for j,a in enumerate(o):
                        for bi,e in enumerate(back):
                            dist=j+bi+(1 if mode in ('seqd1','seqdF1') else 2)
                            if dist<=w:
                                rules[a][e]+=1/dist; rules[e][a]+=1/dist
                    earlier.extend(o); continue
                if mode in ('seqback','seqback2'):
                    # the previous orders' lines at their distance in the sequence
                    for j,a in enumerate(o):
                        for d,e in enumerate(reversed(earlier[-w:])):
                            dist=j+d+(2 if mode=='seqback2' else 1)
                            if dist<=w and e!=a and e not in o:
                                rules[a][e]+=1/dist; rules[e][a]+=1/dist
                    earlier.extend(o); continue
                back=[e for e in reversed(earlier) if e not in o][:w-1]
                for bi,e in enumerate(back):
                    wt=1/(bi+2)
                    for a in o:
                        rules[a][e]+=wt; rules[e][a]+=wt
                earlier.extend(o)
    return rules

def seeds_sr(hist):
    return [(p,1/(1+age)) for age,p in enumerate(reversed(hist[-20:]))]

def seeds_pers(histsteps, purchases=0.25, rec=0.8, lt=2.0, history=10):
    os_=orders_of(histsteps)
    basket=os_[-1]; bought=[p for o in os_[:-1] for p in o]
    if PM=='F': bought=distinct_seq(bought,False)[-32:]
    elif PM=='L': bought=distinct_seq(bought,True)[-32:]
    out=[]
    lists=[(list(reversed(basket)),1.0),(list(reversed(bought)),purchases)]
    if VIEWS:
        views=[]
        for _,p,_ in reversed(histsteps):
            if p not in views: views.append(p)
            if len(views)>=50: break
        lists.insert(0,(views,1.0))
    for lst,top in lists:
        read=min(len(lst), max(50,history)) if lt>0 else min(len(lst),history)
        share=lt/max(1,min(read,50))
        r=top
        for i in range(read):
            wt=0
            if i<history: wt+=r; r*=rec
            if i<50: wt+=top*share
            out.append((lst[i],wt))
    return out

def distinct_seq(bought, latest):
    out=[]
    if latest:
        for p in reversed(bought):
            if p not in out: out.append(p)
        return list(reversed(out))
    for p in bought:
        if p not in out: out.append(p)
    return out

def evaluate(mode, seedf, w=10):
    hits=collections.Counter(); n=collections.Counter()
    for rnd in range(1,H+1):
        rules=fit(rnd,mode,w)
        for v in vis:
            s=seqs[v]; cut=len(s)-H-1
            if cut<1: continue
            pos=cut+rnd; target=s[pos][1]
            hs=s[:pos]; hist=[p for _,p,_ in hs]
            sc=collections.defaultdict(float)
            for p,wt in seedf(hs):
                for b,c in rules.get(p,{}).items(): sc[b]+=wt*c
            hset=set(hist)
            top=[b for b,_ in sorted(sc.items(), key=lambda x:(-x[1],x[0])) if b not in hset][:10]
            k='new' if hs[-1][2]=='order' else 'in'
            n[k]+=1; hits[k]+= target in top
    return dict(hits), sum(hits.values())

PM='';VIEWS=0;which=sys.argv[1:]
for spec in which:
    mode,seed,w=spec.split(':'); w=int(w)
    PM='';VIEWS=0
    if seed.endswith('V'): VIEWS=1; seed=seed[:-1]
    if seed in ('persF','persL'): PM=seed[-1]; seed='pers'
    sf = (lambda hs: seeds_sr([p for _,p,_ in hs])) if seed=='sr' else (lambda hs: seeds_pers(hs)) if seed=='pers' else (lambda hs: seeds_pers(hs,purchases=float(seed)))
    print(spec, evaluate(mode,sf,w), flush=True)
