import fs from 'node:fs'; import path from 'node:path'; import ts from 'typescript';
const SRC='src'; const out:string[]=[];
const files=(d:string):string[]=>fs.readdirSync(d,{withFileTypes:true}).flatMap(e=>{const p=path.join(d,e.name);return e.isDirectory()?files(p):p.endsWith('.ts')&&!p.endsWith('.test.ts')?[p]:[]});
const isFn=(n:ts.Node):n is ts.FunctionLikeDeclaration=>(ts.isFunctionDeclaration(n)||ts.isFunctionExpression(n)||ts.isArrowFunction(n)||ts.isMethodDeclaration(n)||ts.isGetAccessor(n)||ts.isConstructorDeclaration(n))&&!!(n as any).body;
for(const f of files(SRC)){const text=fs.readFileSync(f,'utf8');
const s=ts.createSourceFile(f,text,ts.ScriptTarget.Latest,true);
const line=(p:number)=>s.getLineAndCharacterOfPosition(p).line;
const span=(n:ts.FunctionLikeDeclaration)=>line(n.body!.getEnd())-line(n.body!.getStart())+1;
const nestedLines=(n:ts.Node):number=>{let t=0;const w=(c:ts.Node)=>{if(isFn(c)){const sp=span(c); if(sp>3) t+=sp-2; else {} return;} ts.forEachChild(c,w)}; ts.forEachChild(n,w); return t};
const v=(node:ts.Node)=>{ if(isFn(node)){const total=span(node)-2; const own=total-nestedLines(node.body!); const name=(node as any).name?.getText?.()??(ts.isVariableDeclaration(node.parent)?node.parent.name.getText():ts.isPropertyAssignment(node.parent)?node.parent.name.getText():'?'); if(own>100) out.push(`FN ${f}:${line(node.body!.getStart())+1} ${name} own=${own} total=${total}`);} ts.forEachChild(node,v)}; v(s);}
console.log(out.join('\n'));
