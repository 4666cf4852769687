import csv,sys
rows=list(csv.reader(open(sys.argv[1])))
hdr=rows[1]; data=rows[2:]
ix={h:i for i,h in enumerate(hdr)}
a,b=int(sys.argv[2]),int(sys.argv[3])
stalls=[h for h in hdr if h.startswith('stall_') and '(' not in h]
tot={h:0 for h in stalls}; n=0; ex=0
cls={}
for r in data[a:b]:
    for h in stalls: tot[h]+=int(r[ix[h]] or 0)
    op=r[ix['Source']].strip().split()[0]
    if op.startswith('@'): op=r[ix['Source']].strip().split()[1]
    op=op.split('.')[0]
    e=int(r[ix['Instructions Executed']] or 0)
    cls[op]=cls.get(op,0)+e; ex+=e
T=sum(tot.values())
print(sys.argv[1], 'samples',T, 'instr executed (warp-level)',ex)
print(' '.join(f"{h[6:]}={v}({100*v/T:.0f}%)" for h,v in sorted(tot.items(),key=lambda x:-x[1]) if v))
print(' '.join(f"{k}={v}" for k,v in sorted(cls.items(),key=lambda x:-x[1])[:25]))
