import csv,sys
f=sys.argv[1]; n=int(sys.argv[2]) if len(sys.argv)>2 else 40
rows=list(csv.reader(open(f)))
hdr=rows[1]; data=rows[2:]
ix={h:i for i,h in enumerate(hdr)}
stalls=[h for h in hdr if h.startswith('stall_') and '(' not in h]
tot=sum(int(r[ix['Warp Stall Sampling (All Samples)']] or 0) for r in data)
print('total samples',tot, 'instrs',len(data))
# cumulative by region: print each instruction index with samples
items=[]
for i,r in enumerate(data):
    s=int(r[ix['Warp Stall Sampling (All Samples)']] or 0)
    items.append((s,i,r))
for s,i,r in sorted(items,reverse=True)[:n]:
    br=sorted(((int(r[ix[h]] or 0),h[6:]) for h in stalls),reverse=True)[:3]
    print(f"{i:5d} {s:6d} {100*s/tot:5.1f}% exec={r[ix['Instructions Executed']]:>8} {r[ix['Source']].strip()[:60]:60s} {br}")
